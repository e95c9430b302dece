/**
 * The binary sideband of `client:tool_call` (D24; docs/protocol.md, tool_call).
 *
 * Judged per binary content item (image/audio `data`, embedded resource `resource.blob`) against
 * the same inline budget as get_skill:
 * - decoded size ≤ budget → the item is left untouched;
 * - decoded size > hard cap (`maxSize`) → the item is not sent: it is replaced by a text item that
 *   names it, and the result becomes `isError: true` (D24);
 * - otherwise the bytes go to the spool, the inline field is cleared to "" and the item's `_meta`
 *   gets `a2c_blob_handle`, `a2c_total_size`, `a2c_sha256` (other `_meta` keys and `mimeType` kept).
 * Then, if the serialized ack still would not fit the Server's `maxHttpBufferSize`, the largest
 * remaining inline binary items are sidebanded too, even under budget; if even that is not enough
 * (huge text, huge structuredContent), the result becomes an `isError` explanation. A tool result
 * must never be the message that makes the Server drop the Computer's socket.
 *
 * An item the spool cannot store because of a disk fault (D57) stays inline; if the result then
 * does not fit, the `isError` answer says the Computer is out of disk space (or its disk failed),
 * with `meta.a2c_error_reason` `storage_full` / `storage_error`: a smaller result would not help,
 * free space (or a later call) will. The spool logs the fault once per episode.
 */
import type { Logger } from "pino";
import type { ComputerConfig, HandleMinter } from "../contracts.ts";
import {
  base64LenientLength,
  type CallToolResult,
  encodedAckBytes,
  SIDEBAND_KEYS,
} from "@a2c-smcp/protocol";
import { StorageFaultError, type StorageReason } from "../blob/storage-faults.ts";
import { DEFAULT_BLOB_MIME, isSafeMime, mintToolHandle } from "./producer.ts";
import type { BlobSpool } from "./spool.ts";

type Item = Record<string, unknown>;

interface Carrier {
  index: number;
  /** Base64 text currently inline. */
  data: string;
  mime: string;
  /** Writes the cleared carrier and markers into a copy of the item. */
  clear(meta: Record<string, unknown>): Item;
}

export interface SidebandDeps {
  config: Pick<ComputerConfig, "inlineBudget" | "maxSize" | "maxHttpBufferSize">;
  spool: BlobSpool;
  minter: HandleMinter;
  log: Logger;
}

/** Decoded length of base64 text without decoding it (exact for canonical base64). */
export function base64DecodedLength(b64: string): number {
  // A tool may leave the padding out: Buffer.from decodes it all the same.
  const n = b64.length;
  return base64LenientLength(n, b64.charCodeAt(n - 1), b64.charCodeAt(n - 2));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function itemMeta(item: Item): Record<string, unknown> {
  return isRecord(item._meta) ? item._meta : {};
}

/** The binary carrier of a content item, if it has one with bytes inline. */
function carrierOf(item: Item, index: number): Carrier | null {
  if ((item.type === "image" || item.type === "audio") && typeof item.data === "string") {
    const mime = isSafeMime(item.mimeType) ? item.mimeType : DEFAULT_BLOB_MIME;
    return {
      index,
      data: item.data,
      mime,
      clear: (meta) => ({ ...item, data: "", _meta: { ...itemMeta(item), ...meta } }),
    };
  }
  if (item.type === "resource" && isRecord(item.resource)) {
    const resource = item.resource;
    if (typeof resource.blob !== "string") return null;
    const declared = resource.mimeType ?? item.mimeType;
    const mime = isSafeMime(declared) ? declared : DEFAULT_BLOB_MIME;
    return {
      index,
      data: resource.blob,
      mime,
      clear: (meta) => ({
        ...item,
        resource: { ...resource, blob: "" },
        _meta: { ...itemMeta(item), ...meta },
      }),
    };
  }
  return null;
}

function describe(item: Item, index: number, size: number, mime: string): string {
  const uri =
    item.type === "resource" && isRecord(item.resource) && typeof item.resource.uri === "string"
      ? ` ${item.resource.uri}`
      : "";
  return `content[${index}] (${String(item.type)}${uri}, ${mime}, ${size} bytes)`;
}

function jsonBytes(v: unknown): number {
  return Buffer.byteLength(JSON.stringify(v), "utf8");
}

/** Applies the sideband to a tool result. Never throws for content reasons. */
export async function applySideband(
  result: CallToolResult,
  deps: SidebandDeps,
): Promise<CallToolResult> {
  const { config, log } = deps;
  const content: Item[] = result.content.map((c) => ({ ...c }));
  const tooLarge: string[] = [];
  const unspoolable = new Set<number>();
  /** Items the spool could not store for a disk fault, and why. */
  const storageFaults: { reason: StorageReason; what: string }[] = [];

  const sideband = async (c: Carrier): Promise<boolean> => {
    const bytes = Buffer.from(c.data, "base64");
    try {
      const cid = await deps.spool.put(bytes);
      const handle = mintToolHandle(deps.minter, cid, c.mime);
      content[c.index] = c.clear({
        [SIDEBAND_KEYS.handle]: handle,
        [SIDEBAND_KEYS.totalSize]: bytes.byteLength,
        [SIDEBAND_KEYS.sha256]: cid,
      });
      return true;
    } catch (err) {
      if (err instanceof StorageFaultError) {
        const what = describe(content[c.index] as Item, c.index, bytes.byteLength, c.mime);
        storageFaults.push({ reason: err.reason, what });
      } else {
        log.error({ err, index: c.index, size: bytes.byteLength }, "sideband: spool write failed");
      }
      unspoolable.add(c.index);
      return false;
    }
  };

  // Pass 1: the inline budget and the hard cap, item by item.
  for (let i = 0; i < content.length; i++) {
    const item = content[i] as Item;
    const c = carrierOf(item, i);
    if (!c) continue;
    const size = base64DecodedLength(c.data);
    if (size > config.maxSize) {
      const what = describe(item, i, size, c.mime);
      tooLarge.push(what);
      content[i] = {
        type: "text",
        text: `${what} exceeds this Computer's size cap of ${config.maxSize} bytes and was not sent.`,
      };
      log.warn({ index: i, size, cap: config.maxSize }, "sideband: item over the hard cap");
      continue;
    }
    if (size > config.inlineBudget) await sideband(c);
  }

  let out: CallToolResult = { ...result, content: content as CallToolResult["content"] };
  if (tooLarge.length > 0) out.isError = true;

  // Pass 2: make the whole ack fit the Server's buffer (D16, D24).
  const limit = config.maxHttpBufferSize;
  let size = encodedAckBytes(out);
  while (size > limit) {
    let best: Carrier | null = null;
    for (let i = 0; i < content.length; i++) {
      if (unspoolable.has(i)) continue;
      const c = carrierOf(content[i] as Item, i);
      if (c && c.data.length > 0 && (!best || c.data.length > best.data.length)) best = c;
    }
    if (!best) break;
    const before = jsonBytes(content[best.index]);
    if (await sideband(best)) size += jsonBytes(content[best.index]) - before;
  }
  if (size > limit) {
    const fault = storageFaults[0];
    if (fault) return storageFaultResult(out, fault.reason, fault.what, limit);
    log.warn({ size, limit }, "sideband: result does not fit the Server's buffer");
    out = tooBigResult(out, size, limit);
  }
  return out;
}

/** The isError answer for a result whose blobs the spool could not store (D57). */
function storageFaultResult(
  result: CallToolResult,
  reason: StorageReason,
  what: string,
  limit: number,
): CallToolResult {
  const cause =
    reason === "storage_full"
      ? "the Computer is out of disk space"
      : "the Computer's disk failed a write";
  const text =
    `The tool result could not be sent: ${cause}, so ${what} could not be stored for ` +
    `transfer, and the result is too large to travel without it. Call the tool again once ` +
    `space on the Computer is free.`;
  const err: CallToolResult = {
    content: [{ type: "text", text }],
    isError: true,
    meta: { ...(result.meta ?? {}), a2c_error_reason: reason },
  };
  if (encodedAckBytes(err) <= limit) return err;
  return { ...err, meta: { a2c_error_reason: reason } };
}

/** The isError answer for a result that cannot be made to fit (D24). */
function tooBigResult(result: CallToolResult, size: number, limit: number): CallToolResult {
  const text =
    `The tool result is too large to send: ${size} bytes serialized, but the Server accepts at ` +
    `most ${limit} bytes per message, and only binary content items can travel as blobs ` +
    `(text and structuredContent cannot). Ask the tool for a smaller result.`;
  const err: CallToolResult = { content: [{ type: "text", text }], isError: true };
  if (result.meta !== undefined) {
    const withMeta = { ...err, meta: result.meta };
    if (encodedAckBytes(withMeta) <= limit) return withMeta;
  }
  return err;
}
