/**
 * The Agent's transport: its one departure from stock socket.io-client, behind one switch
 * (`AgentClientOptions.transport`, the CLI's `--stock-transport`), as the Server's and the
 * Computer's transports are theirs.
 *
 * `upload_text`: a base64 `client:put_blob` chunk of this SDK's uploads is written as
 * socket.io-parser writes it, but built around its `blob` instead of through JSON.stringify of the
 * whole payload: the payload's other fields are stringified with an empty `blob`, and the base64
 * text is put between its quotes. Base64 holds no character JSON escapes, so the text is byte for
 * byte what the stock Encoder writes (the probe compares the two at start); what it spares is
 * JSON.stringify's scan and copy of every chunk's base64 (a quarter of the Agent's CPU per MB of a
 * base64 upload). Every other packet, a caller's own `blob` string included, goes through
 * socket.io-parser as is.
 *
 * Departure from stock: a custom parser is a public socket.io-client option (`parser`); nothing
 * private is read. The Decoder is socket.io-parser's own.
 */
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import { Events } from "@a2c-smcp/protocol";

/** `"fast"` (default): every fast path the installed libraries support; `"stock"`: none. */
export type AgentTransport = "fast" | "stock";

export type FastPathState = "on" | "off" | `unavailable: ${string}`;

/** What each fast path of this client is doing (`AgentClient.fastPaths`). */
export interface AgentFastPaths {
  readonly upload_text: FastPathState;
}

/**
 * The names of this transport's fast paths (the keys of `AgentFastPaths`): what the bench's
 * transport section measures the Agent without.
 */
export const AGENT_FAST_PATH_NAMES = [
  "upload_text",
] as const satisfies readonly (keyof AgentFastPaths)[];

/** The stringified empty `blob` the base64 is put into (its closing quote is where it goes). */
const EMPTY_BLOB = '"blob":""';

/**
 * Payloads whose `blob` this SDK encoded from bytes (`Buffer#toString("base64")`): base64 holds
 * no character JSON.stringify escapes, so their text can be built around it unchecked. Any other
 * payload (a caller's own string) is the stock Encoder's to write.
 */
const BASE64_PAYLOADS = new WeakSet<object>();

/** Marks `payload` as carrying base64 this SDK encoded (`upload-wire.ts`). */
export function markBase64Payload(payload: object): void {
  BASE64_PAYLOADS.add(payload);
}

/** The text of a put_blob event packet as the stock Encoder writes it, or null to let it. */
function uploadText(packet: Packet): string | null {
  const data: unknown = packet.data;
  if (packet.type !== PacketType.EVENT || !Array.isArray(data) || data.length !== 2) return null;
  const payload = data[1] as { blob?: unknown } | null;
  if (data[0] !== Events.PutBlob || payload === null || !BASE64_PAYLOADS.has(payload)) return null;
  const blob = payload.blob;
  if (typeof blob !== "string") return null;
  const text = JSON.stringify([Events.PutBlob, { ...payload, blob: "" }]);
  // Keys keep their order, so the first `"blob":""` outside a string is the payload's own: a
  // quote inside a string is escaped.
  const at = text.indexOf(EMPTY_BLOB);
  if (at < 0) return null;
  const cut = at + EMPTY_BLOB.length - 1;
  let head = String(PacketType.EVENT);
  if (packet.nsp && packet.nsp !== "/") head += `${packet.nsp},`;
  if (packet.id !== undefined && packet.id !== null) head += String(packet.id);
  return head + text.slice(0, cut) + blob + text.slice(cut);
}

export class UploadTextEncoder extends Encoder {
  override encode(packet: Packet): unknown[] {
    const text = uploadText(packet);
    return text === null ? (super.encode(packet) as unknown[]) : [text];
  }
}

/**
 * Whether the installed socket.io-parser writes a put_blob chunk as `UploadTextEncoder` does:
 * null, or why not. Chunks with every optional field, strings that need escapes beside the
 * base64, and a packet without an id go through both Encoders.
 */
export function probeUploadText(): string | null {
  try {
    const stock = new Encoder();
    const ours = new UploadTextEncoder();
    const blob = Buffer.from("probe \u00ff bytes").toString("base64");
    const samples: Packet[] = [
      {
        type: PacketType.EVENT,
        nsp: "/smcp",
        id: 7,
        data: [
          Events.PutBlob,
          {
            agent: 'a"blob":""',
            req_id: "r\u00e9\n",
            computer: "c",
            chunk_offset: 0,
            eof: false,
            total_size: 12,
            sha256: "ab".repeat(32),
            name_hint: "x\\y",
            blob,
            blob_format: "base64",
          },
        ],
      },
      { type: PacketType.EVENT, nsp: "/", data: [Events.PutBlob, { blob, eof: true }] },
    ];
    for (const packet of samples) {
      markBase64Payload((packet.data as object[])[1]!);
      const want = stock.encode(packet);
      const got = ours.encode(packet);
      if (got.length !== 1 || want.length !== 1 || got[0] !== want[0]) {
        return "socket.io-parser writes a put_blob chunk differently";
      }
    }
    return null;
  } catch (err) {
    return `socket.io-parser: ${(err as Error).message}`;
  }
}

/** The fast paths for `transport`, probed on the installed socket.io-parser. */
export function decideFastPaths(transport: AgentTransport = "fast"): AgentFastPaths {
  if (transport === "stock") return { upload_text: "off" };
  probed ??= { missing: probeUploadText() };
  return { upload_text: probed.missing === null ? "on" : `unavailable: ${probed.missing}` };
}

/** The probe's finding: the installed library does not change while the process runs. */
let probed: { missing: string | null } | undefined;

/** socket.io-client options for `paths`: its `parser` when a fast path needs one. */
export function socketOptions(paths: AgentFastPaths): { parser?: unknown } {
  if (paths.upload_text !== "on") return {};
  return { parser: { protocol, PacketType, Encoder: UploadTextEncoder, Decoder } };
}
