/**
 * Size math for D16 (protocol.md §6.3): the exact serialized size of an ack under socket.io's default
 * parser, and the largest chunk whose `GetBlobRet` ack fits the Server's `maxHttpBufferSize`.
 *
 * How an ack travels from a client (the Computer) to the Server, default parser:
 *   engine.io message = "4" + socket.io packet
 *   socket.io packet  = "3" + "<nsp>," + "<ack id>" + JSON.stringify([payload])        (ACK)
 *                     = "6" + "<n>-" + "<nsp>," + "<ack id>" + JSON with placeholders  (BINARY_ACK)
 *                       followed by one engine.io message per attachment: the raw bytes over
 *                       WebSocket, "b" + base64(bytes) over HTTP long-polling.
 * The Server drops the whole connection when one message is larger than `maxHttpBufferSize`
 * (ws `maxPayload`, polling 413), so every message must be `<=` the limit.
 *
 * The ack id is the Server's namespace-wide counter, unknown to the Computer, so it is budgeted at
 * its widest: 16 digits (Number.MAX_SAFE_INTEGER). Callers that know it may pass it.
 */
import { LIMITS } from "./messages/common.ts";
import { NAMESPACE } from "./version.ts";

/** socket.io's default `maxHttpBufferSize` (engine.io): 1,000,000 bytes. */
export const DEFAULT_MAX_HTTP_BUFFER_SIZE = 1_000_000;

/** Digits of the widest ack id the Server can assign. */
export const MAX_ACK_ID_DIGITS = String(Number.MAX_SAFE_INTEGER).length;

export type Carriage = "base64" | "binary";
export type Transport = "websocket" | "polling";

export interface AckFraming {
  /** Namespace of the socket that sends the ack. Default `/smcp`. */
  namespace?: string;
  /** The ack id if known; otherwise the widest possible id is assumed. */
  ackId?: number;
}

function frameOverhead(kind: "ack" | "binary_ack", framing: AckFraming, attachments = 1): number {
  const nsp = framing.namespace ?? NAMESPACE;
  const idDigits =
    framing.ackId === undefined ? MAX_ACK_ID_DIGITS : String(Math.trunc(framing.ackId)).length;
  let n = 1 /* engine.io "4" */ + 1; /* packet type digit */
  if (kind === "binary_ack") n += String(attachments).length + 1; /* "<n>-" */
  if (nsp !== "/") n += Buffer.byteLength(nsp) + 1; /* "<nsp>," */
  return n + idDigits;
}

/**
 * Exact byte length of the engine.io text message that carries `payload` as the single argument
 * of an ack (no binary inside `payload`).
 */
export function encodedAckBytes(payload: unknown, framing: AckFraming = {}): number {
  return frameOverhead("ack", framing) + Buffer.byteLength(JSON.stringify([payload]), "utf8");
}

/** A socket.io packet's header, read from the text of the engine.io message carrying it. */
export interface PacketHeader {
  /** The packet type (0 CONNECT, 1 DISCONNECT, 2 EVENT, 3 ACK, 4 CONNECT_ERROR, 5, 6 binary). */
  type: number;
  nsp: string;
  /** The ack id; undefined without one, or with more than 15 digits (not a counter's). */
  id: number | undefined;
  /** Index of the payload's first character (after the id). */
  start: number;
}

const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const isDigit = (c: number): boolean => c >= DIGIT_0 && c <= DIGIT_9;
/** Ack ids are counters; a longer run of digits is left unread (`id` undefined). */
const MAX_ID_DIGITS = 15;

/**
 * `<type>[<attachments>-][<nsp>,][<id>]` as socket.io-parser reads it (the namespace runs to the
 * first comma, or to the end), or null when the text starts with no packet type.
 */
export function readPacketHeader(text: string): PacketHeader | null {
  const type = text.charCodeAt(0) - DIGIT_0;
  if (!(type >= 0 && type <= 6)) return null;
  let i = 1;
  if (type === 5 || type === 6) {
    const dash = text.indexOf("-", 1);
    if (dash < 0) return null;
    i = dash + 1;
  }
  let nsp = "/";
  if (text.charCodeAt(i) === 0x2f /* / */) {
    const comma = text.indexOf(",", i);
    nsp = comma < 0 ? text.slice(i) : text.slice(i, comma);
    i = comma < 0 ? text.length : comma + 1;
  }
  const idStart = i;
  while (isDigit(text.charCodeAt(i))) i++;
  if (i === idStart || i - idStart > MAX_ID_DIGITS)
    return { type, nsp, id: undefined, start: idStart };
  return { type, nsp, id: Number(text.slice(idStart, i)), start: i };
}

/**
 * The header of a text packet as socket.io-parser writes it: `<type>[<nsp>,][<id>]`, the
 * namespace only when it is not `/` (the inverse of `readPacketHeader` for text packets).
 */
export function writePacketHeader(
  type: number,
  nsp: string | undefined,
  id?: number | null,
): string {
  let text = String(type);
  if (nsp && nsp !== "/") text += `${nsp},`;
  if (id !== undefined && id !== null) text += String(id);
  return text;
}

/** Length of base64 text for `n` bytes (standard alphabet, padded). */
export function base64Length(n: number): number {
  return 4 * Math.ceil(n / 3);
}

/** The char code of `=`, base64's padding. */
const BASE64_PAD = 0x3d;

/**
 * The decoded byte length of padded standard base64 text of `length` characters whose last two
 * characters have the char codes `last` and `beforeLast` (a string's `charCodeAt`, or the bytes
 * of text not yet decoded): arithmetic on the length and the padding, never a decode. -1 when no
 * padded base64 text has that length. For canonical base64 it is exact; whether the characters
 * are base64 at all is for the decoder to say.
 */
export function base64DecodedLength(length: number, last: number, beforeLast: number): number {
  if (!Number.isSafeInteger(length) || length < 0 || length % 4 !== 0) return -1;
  if (length === 0) return 0;
  const pad = last === BASE64_PAD ? (beforeLast === BASE64_PAD ? 2 : 1) : 0;
  return (length / 4) * 3 - pad;
}

/** The strings a chunk answer echoes; those not known yet count at their longest. */
/**
 * What a lenient decoder (Node's `Buffer.from(text, "base64")`) makes of base64 text that may
 * lack its padding: `base64DecodedLength` when the text is padded, else the bytes its characters
 * stand for. What a Server or Computer counts of text a sender made; an Agent takes padded text
 * only.
 */
export function base64LenientLength(length: number, last: number, beforeLast: number): number {
  const padded = base64DecodedLength(length, last, beforeLast);
  if (padded >= 0 || !Number.isSafeInteger(length) || length < 0) return Math.max(0, padded);
  const pad = last === BASE64_PAD ? (beforeLast === BASE64_PAD ? 2 : 1) : 0;
  return Math.max(0, Math.floor((length * 3) / 4) - pad);
}

export interface EnvelopeStrings {
  blob_handle: string;
  req_id: string;
  /** Unknown before the answer: counted as `LIMITS.mime` characters. */
  mime_type?: string;
  /** Unknown before the answer: 64 hex digits. */
  sha256?: string;
}

/**
 * An upper bound of a `GetBlobRet` ack's bytes besides its chunk, without serializing it
 * (`encodedAckBytes` and `maxChunkBytes` count exactly): every UTF-16 unit of the strings escaped
 * as `\uXXXX` (6 bytes), three numbers of at most 24 characters, and 512 bytes for keys,
 * punctuation, `eof`, `blob_format`, `content_encoding`'s value, the binary placeholder, the
 * polling prefix and the socket.io / engine.io framing (namespace, ack id), which need < 300.
 */
export function chunkEnvelopeBound(e: EnvelopeStrings): number {
  const mime = e.mime_type?.length ?? LIMITS.mime;
  const chars = e.blob_handle.length + e.req_id.length + mime + (e.sha256?.length ?? 64);
  return 6 * chars + 3 * 24 + 512;
}

export interface ChunkEnvelope {
  blob_handle: string;
  mime_type: string;
  total_size: number;
  sha256: string;
  chunk_offset: number;
  req_id: string;
  /** Echoed when binary carriage is honoured (D19). */
  blob_format?: "binary" | "base64";
  /** Extra keys the Computer adds to its answer, if any. */
  [key: string]: unknown;
}

export interface ChunkLimitInput extends AckFraming {
  /** The Server's `maxHttpBufferSize` in bytes. */
  maxHttpBufferSize: number;
  /** Every field of the `GetBlobRet` except `blob` and `eof`. */
  envelope: ChunkEnvelope;
  carriage: Carriage;
  /** The Computer's current transport. Default `websocket`. */
  transport?: Transport;
}

/**
 * The largest chunk (raw bytes) whose serialized ack fits `maxHttpBufferSize`, exact to the byte:
 * the ack with this chunk fits, with one byte more it does not. 0 when not even one byte fits.
 * `eof` is budgeted as `false`, its longer spelling.
 */
export function maxChunkBytes(input: ChunkLimitInput): number {
  const limit = Math.floor(input.maxHttpBufferSize);
  if (input.carriage === "base64") {
    const envelope = encodedAckBytes({ ...input.envelope, eof: false, blob: "" }, input);
    const room = limit - envelope;
    return room < 4 ? 0 : Math.floor(room / 4) * 3;
  }
  // Binary: the header message carries a placeholder; the bytes travel as their own message.
  const header =
    frameOverhead("binary_ack", input) +
    Buffer.byteLength(
      JSON.stringify([{ ...input.envelope, eof: false, blob: { _placeholder: true, num: 0 } }]),
      "utf8",
    );
  if (header > limit) return 0;
  if ((input.transport ?? "websocket") === "websocket") return limit;
  const room = limit - 1; /* "b" prefix of a base64-encoded binary message over polling */
  return room < 4 ? 0 : Math.floor(room / 4) * 3;
}

/**
 * Exact sizes of the messages that carry a `GetBlobRet` with `chunkBytes` of payload, for tests
 * and for the bench's "would this exceed the buffer" marks. Returns the largest single message.
 */
export function largestAckMessage(
  envelope: ChunkEnvelope,
  chunkBytes: number,
  eof: boolean,
  carriage: Carriage,
  framing: AckFraming & { transport?: Transport } = {},
): number {
  if (carriage === "base64") {
    return encodedAckBytes({ ...envelope, eof, blob: "" }, framing) + base64Length(chunkBytes);
  }
  const header =
    frameOverhead("binary_ack", framing) +
    Buffer.byteLength(
      JSON.stringify([{ ...envelope, eof, blob: { _placeholder: true, num: 0 } }]),
      "utf8",
    );
  const body =
    (framing.transport ?? "websocket") === "websocket" ? chunkBytes : 1 + base64Length(chunkBytes);
  return Math.max(header, body);
}
