/**
 * tool_call binary sideband, the Agent's half (docs/protocol.md, "tool_call"; D24, D25):
 * "Agent MUST scan every content item for `_meta.a2c_blob_handle` and drain it". Each sidebanded
 * item is pulled with the one pull loop, checked against its own `a2c_sha256` and
 * `a2c_total_size`, and put back where MCP expects it
 * (`data` for image/audio, `resource.blob` for embedded resources) with the `a2c_*` keys removed,
 * so the result reads exactly like an inline one. A failure is a `SidebandRestoreError`, never a
 * silently empty item.
 */
import { constants as bufferConstants } from "node:buffer";
import {
  SIDEBAND_KEYS,
  base64Length,
  type CallToolResult,
  type ContentItem,
} from "@a2c-smcp/protocol";
import { BlobTooLargeError, SidebandRestoreError } from "./errors.ts";

const HEX64 = /^[0-9a-f]{64}$/;

export interface SidebandItem {
  /** Index in `content`. */
  index: number;
  handle: string;
  totalSize: number;
  sha256: string;
  mimeType: string | undefined;
  /** Where the bytes go back. */
  target: "data" | "resource.blob";
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Every sidebanded item of a result; a handle without valid size/sha is an error. */
export function findSidebandItems(result: CallToolResult): SidebandItem[] {
  const items: SidebandItem[] = [];
  result.content.forEach((raw: ContentItem, index) => {
    const item = raw as Json;
    const meta = item._meta;
    if (!isObject(meta)) return;
    const handle = meta[SIDEBAND_KEYS.handle];
    if (handle === undefined) return;
    if (typeof handle !== "string" || handle.length === 0) {
      throw new SidebandRestoreError(index, "a2c_blob_handle is not a non-empty string");
    }
    const size = meta[SIDEBAND_KEYS.totalSize];
    const sha = meta[SIDEBAND_KEYS.sha256];
    if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
      throw new SidebandRestoreError(index, "a2c_total_size is missing or not a size");
    }
    if (typeof sha !== "string" || !HEX64.test(sha)) {
      throw new SidebandRestoreError(index, "a2c_sha256 is missing or not 64 hex characters");
    }
    const resource = item.resource;
    const isMedia = item.type === "image" || item.type === "audio" || "data" in item;
    const target = !isMedia && isObject(resource) ? "resource.blob" : "data";
    const mimeType =
      target === "data"
        ? typeof item.mimeType === "string"
          ? item.mimeType
          : undefined
        : isObject(resource) && typeof resource.mimeType === "string"
          ? resource.mimeType
          : undefined;
    items.push({ index, handle, totalSize: size, sha256: sha, mimeType, target });
  });
  return items;
}

/** `_meta` without the `a2c_*` keys, or undefined when nothing else is left. */
export function stripA2cMeta(meta: Json): Json | undefined {
  const out: Json = {};
  for (const [k, v] of Object.entries(meta)) if (!k.startsWith("a2c_")) out[k] = v;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The item with `bytes` put back and its sideband markers removed (a new object). */
export function restoreItem(item: ContentItem, where: SidebandItem, bytes: Buffer): ContentItem {
  const out: Json = { ...(item as Json) };
  const b64 = bytes.toString("base64");
  if (where.target === "resource.blob") {
    out.resource = { ...(out.resource as Json), blob: b64 };
  } else {
    out.data = b64;
  }
  const meta = stripA2cMeta(out._meta as Json);
  if (meta) out._meta = meta;
  else delete out._meta;
  return out as ContentItem;
}

/**
 * Pulls every sidebanded item (one after another) and returns a new result with the bytes
 * restored. `pull` must verify against `expectedSha256` / `expectedSize`; the lengths are checked
 * here again. The items together are held in memory, as base64 strings: their sizes are checked
 * against `maxBytes` (all items together) and against what one string holds before anything is
 * pulled (D45).
 */
export async function restoreSideband(
  result: CallToolResult,
  pull: (item: SidebandItem) => Promise<Buffer>,
  maxBytes: number,
): Promise<CallToolResult> {
  const items = findSidebandItems(result);
  if (items.length === 0) return result;
  let sum = 0;
  for (const where of items) {
    sum += where.totalSize;
    const tooLarge =
      sum > maxBytes
        ? new BlobTooLargeError(sum, maxBytes, "limit")
        : base64Length(where.totalSize) > bufferConstants.MAX_STRING_LENGTH
          ? new BlobTooLargeError(where.totalSize, bufferConstants.MAX_STRING_LENGTH, "string")
          : undefined;
    if (tooLarge) {
      throw new SidebandRestoreError(where.index, `cannot restore in memory: ${tooLarge.message}`, {
        cause: tooLarge,
      });
    }
  }
  const content = [...result.content];
  for (const where of items) {
    let bytes: Buffer;
    try {
      bytes = await pull(where);
    } catch (err) {
      throw new SidebandRestoreError(
        where.index,
        `could not pull the sidebanded bytes: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (bytes.length !== where.totalSize) {
      throw new SidebandRestoreError(
        where.index,
        `pulled ${bytes.length} bytes, a2c_total_size says ${where.totalSize}`,
      );
    }
    content[where.index] = restoreItem(content[where.index]!, where, bytes);
  }
  return { ...result, content };
}
