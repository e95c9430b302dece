/**
 * Raw acks: a Computer's text ack crosses the Server as the JSON text it sent (D13: the Server
 * "relays the Computer's ack unchanged. It never parses or rebuilds `blob`"). The Server's
 * socket.io parser is socket.io-parser with one shortcut for plain (text) ACK packets.
 *
 * Every `client:get_blob` answer crosses the Server as an ACK packet: the Computer's ack in, the
 * Agent's ack out. The standard parser JSON.parses the whole ack (a 64 KiB chunk is ~88 KB of
 * base64 text) and JSON.stringifies it again, only for the relay to pass it on untouched. Here the
 * Decoder reads only the header of a text ACK (`3/smcp,<id>`) and keeps the data array's text as
 * an `AckText`; the relay's ack callback receives it as its single argument and hands it back to
 * the Agent's ack; the Encoder writes `3/smcp,<agent id>` + the same text. The Agent thus receives
 * the Computer's ack byte for byte, and the Server never builds `blob`. An ack that crosses to
 * another node (Redis) is serialized by the adapter as the value it stands for (`AckText#toJSON`),
 * so every deployment runs the same relay.
 *
 * Everything else (EVENT, BINARY_EVENT, BINARY_ACK for binary carriage (D19), CONNECT,
 * DISCONNECT, an ACK without data or with an unusual header) goes through socket.io-parser
 * unchanged, so the clients (standard socket.io-client Agents and Computers) see no difference.
 *
 * Malformed ACK text: the data must be a JSON array, checked as the standard parser does without
 * building the long strings (`checkAckJson`). Text that is not one throws "invalid payload" like
 * the standard Decoder; socket.io then closes that Computer's connection and the relay answers its
 * requests in flight with 404 `disconnected` (D11): the Server never forwards text an Agent could
 * not decode. Size: the Decoder adds no limit of its own; engine.io's `maxHttpBufferSize` has
 * already refused any larger message, and an AckText (a slice of that message) lives only until
 * the relay answers or drops the request.
 *
 * What an answer carried (`a2c_relay_resource_bytes_total`) is counted during the check, from the
 * length and padding of `blob`, never by decoding it.
 *
 * Departure from stock: a custom parser is a public socket.io option, but the Decoder reads
 * socket.io-parser's private `reconstructor` (a binary packet waiting for its attachments), and
 * the relay relies on socket.io handing an ACK's data to the ack callback as decoded.
 * `probeRawAcks` sends an ack through the installed classes at start.
 */
import { Socket as IoSocket } from "socket.io";
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import { base64LenientLength, readPacketHeader } from "@a2c-smcp/protocol";

/**
 * How an ack carried resource bytes: `blob` as base64 text or a binary attachment, or `body`
 * inline as text (the `carriage` label of `a2c_relay_resource_bytes_total`). Not the protocol's
 * `Carriage`, which is how a chunk travels and has no `inline`.
 */
export type CarriedAs = "base64" | "binary" | "inline";

/** What an ack carried: its decoded resource bytes and their carriage (null: nothing). */
export interface Carried {
  bytes: number;
  carriage: CarriedAs | null;
}

const NOTHING: Carried = { bytes: 0, carriage: null };

/** The decoded bytes `value` stands for as the `key` of an answer. */
export function carriedBy(key: "blob" | "body", value: string): Carried {
  if (key === "body") return { bytes: Buffer.byteLength(value, "utf8"), carriage: "inline" };
  const n = value.length;
  return {
    bytes: base64LenientLength(n, value.charCodeAt(n - 1), value.charCodeAt(n - 2)),
    carriage: "base64",
  };
}

/** What a decoded answer (an ack's first argument as a value) carried. */
export function carriedOf(answer: unknown): Carried {
  if (typeof answer !== "object" || answer === null) return NOTHING;
  const a = answer as { blob?: unknown; body?: unknown };
  if (typeof a.blob === "string") return carriedBy("blob", a.blob);
  if (a.blob instanceof Uint8Array || a.blob instanceof ArrayBuffer) {
    return { bytes: a.blob.byteLength, carriage: "binary" };
  }
  if (a.blob === undefined && typeof a.body === "string") return carriedBy("body", a.body);
  return NOTHING;
}

/**
 * The arguments of one ack, as the JSON text of their array (`[arg0, arg1, …]`). socket.io sees
 * it as the ack's single argument. Serialized by anyone else (the Redis adapter's msgpack or JSON
 * carrying an ack to another node, a custom link), it stands for the first argument it holds, as
 * those carry one ack argument: `toJSON` parses the text then (once).
 */
export class AckText {
  #first: { value: unknown } | undefined;

  constructor(
    /** The array's JSON exactly as the Computer sent it (valid JSON, an array). */
    readonly json: string,
    /** The resource bytes it carried, counted while it was checked. */
    readonly carried: Carried,
  ) {}

  /** The arguments as values (parses the text). */
  args(): unknown[] {
    return JSON.parse(this.json) as unknown[];
  }

  /** The first argument as a value: what a serializer that meets this ack argument writes. */
  toJSON(): unknown {
    this.#first ??= { value: this.args()[0] };
    return this.#first.value;
  }
}

/** Strings longer than this are not copied into the skeleton that JSON.parse validates. */
const LONG_STRING = 64;

/**
 * The content of a string token up to its closing quote when it has no escape and no control
 * character. Sticky and greedy: V8 runs it as one tight loop (~0.3 ns a character here), where an
 * unanchored search for the first bad character (`/[\x00-\x1f\\]/.test`) costs ten times more
 * than JSON.parse itself.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it excludes
const PLAIN_CONTENT = /[^\u0000-\u001f"\\]*/y;

/** Skeleton marker prefix: a value starting with a backslash cannot come from a plain token. */
const MARK = "\\";

/** The characters a JSON string token can hold only escaped: the backslash and U+0000–U+001F. */
const NOT_PLAIN = ["\\", ...Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c))];

/**
 * True when no character of `NOT_PLAIN` occurs anywhere in `json`. Then every string token is
 * plain and ends at the next quote: 33 native searches over the whole text cost less than
 * matching every token with PLAIN_CONTENT. JSON.stringify writes no backslash unless a string
 * needs an escape, so a chunk ack qualifies.
 */
function allPlain(json: string): boolean {
  for (const c of NOT_PLAIN) if (json.includes(c)) return false;
  return true;
}

/** What the token walk reads of the JSON. */
interface JsonSource {
  /** Index of the next `"` at or after `from`, or -1. */
  quote(from: number): number;
  /** Where the plain content of a string token starting at `from` stops (its closing `"` if any). */
  plainEnd(from: number): number;
  /** The text between two indexes (short pieces only). */
  text(from: number, to?: number): string;
  code(at: number): number;
  /** UTF-8 bytes of the plain content between the quotes at `open` and `close`. */
  contentBytes(open: number, close: number): number;
  /** The whole text through JSON.parse (a token that is not plain). */
  fullCheck(): Carried | null;
}

/**
 * Checks that `json` is a JSON array and measures what its first argument's `blob` / `body`
 * string carries. Returns that count, or null if the text is not a JSON array.
 *
 * Fast path (every ack socket.io-client's JSON.stringify writes for a chunk): each string token is
 * found with indexOf and its content consumed by PLAIN_CONTENT, or, when the text holds no
 * backslash and no control character at all, runs to the next quote. When every token is plain (no
 * escape, no control character), any content between its quotes is valid string content, so the
 * text is valid JSON exactly when its skeleton — the text with each long string replaced by a
 * short marker string — is; that skeleton is a few hundred bytes for a chunk ack. Any other
 * token (escapes, control characters, no closing quote) sends the whole text through JSON.parse,
 * as socket.io would.
 */
export function checkAckJson(json: string): Carried | null {
  if (json.charCodeAt(0) !== 0x5b /* [ */) return null;
  const plain = allPlain(json);
  const quote = (from: number): number => json.indexOf('"', from);
  return checkTokens({
    quote,
    plainEnd: plain
      ? quote
      : (from) => {
          PLAIN_CONTENT.lastIndex = from;
          PLAIN_CONTENT.test(json);
          return PLAIN_CONTENT.lastIndex;
        },
    text: (from, to) => json.slice(from, to),
    code: (at) => json.charCodeAt(at),
    contentBytes: (open, close) => Buffer.byteLength(json.slice(open + 1, close), "utf8"),
    fullCheck: () => fullCheck(json),
  });
}

/** The token walk of `checkAckJson` (which see). */
function checkTokens(src: JsonSource): Carried | null {
  const longs: { open: number; close: number }[] = [];
  let skeleton = "";
  let from = 0;
  for (;;) {
    const open = src.quote(from);
    if (open < 0) break;
    const close = src.plainEnd(open + 1);
    if (close < 0 || src.code(close) !== 0x22 /* " */) return src.fullCheck();
    if (close - open - 1 > LONG_STRING) {
      skeleton += `${src.text(from, open)}"${MARK}${MARK}${longs.length}"`;
      longs.push({ open, close });
    } else {
      skeleton += src.text(from, close + 1);
    }
    from = close + 1;
  }
  skeleton += src.text(from);
  const parsed = parseArray(skeleton);
  if (!parsed) return null;
  const found = carriedString(parsed[0]);
  if (found === null) return NOTHING;
  if (!found.value.startsWith(MARK)) return carriedBy(found.key, found.value);
  const long = longs[Number(found.value.slice(1))];
  if (!long) return NOTHING;
  if (found.key === "body") {
    return { bytes: src.contentBytes(long.open, long.close), carriage: "inline" };
  }
  const bytes = base64LenientLength(
    long.close - long.open - 1,
    src.code(long.close - 1),
    src.code(long.close - 2),
  );
  return { bytes, carriage: "base64" };
}

function fullCheck(json: string): Carried | null {
  const parsed = parseArray(json);
  if (!parsed) return null;
  const found = carriedString(parsed[0]);
  return found === null ? NOTHING : carriedBy(found.key, found.value);
}

function parseArray(text: string): unknown[] | null {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** `blob` of a get_blob answer, else `body` of a get_skill answer, when it is a string. */
function carriedString(answer: unknown): { key: "blob" | "body"; value: string } | null {
  if (typeof answer !== "object" || answer === null) return null;
  const a = answer as { blob?: unknown; body?: unknown };
  if (a.blob !== undefined)
    return typeof a.blob === "string" ? { key: "blob", value: a.blob } : null;
  return typeof a.body === "string" ? { key: "body", value: a.body } : null;
}

/** What one answer carried, from the ack arguments the relay received for it. */
export function carriedByAck(ackArgs: readonly unknown[]): Carried {
  const first = ackArgs[0];
  return first instanceof AckText ? first.carried : carriedOf(first);
}

const OPEN_BRACKET = 0x5b;

interface AckHeader {
  nsp: string;
  id: number;
  /** Index of the data array's `[`. */
  start: number;
}

/**
 * `3[<nsp>,]<id>[` (protocol/sizing.ts reads the header as socket.io-parser does), or null for
 * anything else (no id, no data) — those take the standard path.
 */
export function readAckHeader(text: string): AckHeader | null {
  const h = readPacketHeader(text);
  if (h?.type !== 3 || h.id === undefined || text.charCodeAt(h.start) !== OPEN_BRACKET) return null;
  return { nsp: h.nsp, id: h.id, start: h.start };
}

/** The first character of a plain (text) ACK packet: socket.io-parser's type 3. */
const ACK_TYPE = 0x33;

export class AckTextDecoder extends Decoder {
  override add(obj: unknown): void {
    // Only a text ACK is read here; every other message (the text part of a binary ack, the
    // Agents' events) costs one character compare (D102). While a binary packet waits for
    // its attachments, a text message is a protocol error that the standard Decoder reports.
    if (typeof obj === "string" && obj.charCodeAt(0) === ACK_TYPE && !this.waitsForAttachments()) {
      const header = readAckHeader(obj);
      if (header) {
        const json = obj.slice(header.start);
        const carried = checkAckJson(json);
        if (carried === null) throw new Error("invalid payload");
        return this.emitAck(header, new AckText(json, carried));
      }
    }
    super.add(obj);
  }

  private emitAck(header: AckHeader, args: AckText): void {
    const packet: Packet = { type: PacketType.ACK, nsp: header.nsp, id: header.id, data: [args] };
    this.emitReserved("decoded", packet);
  }

  /** A binary packet is waiting for its attachments (socket.io-parser's private field). */
  waitsForAttachments(): boolean {
    return Boolean((this as unknown as { reconstructor?: unknown }).reconstructor);
  }
}

export class AckTextEncoder extends Encoder {
  override encode(packet: Packet): unknown[] {
    const data: unknown = packet.data;
    if (
      packet.type === PacketType.ACK &&
      Array.isArray(data) &&
      data.length === 1 &&
      data[0] instanceof AckText
    ) {
      let head = "3";
      if (packet.nsp && packet.nsp !== "/") head += `${packet.nsp},`;
      if (packet.id !== undefined && packet.id !== null) head += String(packet.id);
      return [head + data[0].json];
    }
    return super.encode(packet) as unknown[];
  }
}

/** The `parser` option of socket.io's Server. */
export const rawAckParser = {
  protocol,
  PacketType,
  Encoder: AckTextEncoder,
  Decoder: AckTextDecoder,
};

/**
 * Whether the installed socket.io and socket.io-parser relay a text ack as text: null, or why not.
 * An ACK packet goes through the real parser classes (a text ACK while a binary packet waits for
 * its attachment, then one after it), socket.io's `Socket#onack` must hand the ack callback the
 * `AckText` as its one argument, and the ack socket.io builds for an Agent (`Socket#ack`) must
 * encode as the same text under the Agent's id.
 */
export function probeRawAcks(): string | null {
  try {
    if (typeof Decoder !== "function" || typeof Encoder !== "function") {
      return "socket.io-parser exports no Decoder/Encoder";
    }
    const decoded: Packet[] = [];
    const decoder = new AckTextDecoder();
    decoder.on("decoded", (p: Packet) => decoded.push(p));
    // A binary event waiting for its attachment: a text ACK meanwhile is the standard Decoder's.
    decoder.add('51-/smcp,["e",{"_placeholder":true,"num":0}]');
    if (!decoder.waitsForAttachments()) return "socket.io-parser's Decoder has no reconstructor";
    decoder.add(Buffer.from([1]));
    const text = '[{"blob":"QUJD"},null]';
    decoder.add(`3/smcp,7${text}`);
    const ack = decoded[1];
    if (decoded.length !== 2 || ack?.type !== PacketType.ACK || ack.id !== 7) {
      return "socket.io-parser decodes packets differently";
    }
    const io = IoSocket.prototype as unknown as {
      onack(this: unknown, packet: Packet): void;
      ack(this: unknown, id: number): (...args: unknown[]) => void;
      packet: unknown;
    };
    let received: unknown[] = [];
    const acks = new Map([[7, (...args: unknown[]) => (received = args)]]);
    io.onack.call({ acks }, ack);
    const [first] = received;
    if (received.length !== 1 || !(first instanceof AckText) || first.json !== text) {
      return "socket.io does not hand an ack's decoded data to its callback as it is";
    }
    let relayed: Packet | undefined;
    const agent = {
      nsp: { name: "/smcp" },
      client: { _packet: (p: Packet) => (relayed = p) },
      packet: io.packet,
    };
    io.ack.call(agent, 12)(first);
    const out = relayed ? new AckTextEncoder().encode(relayed) : [];
    if (out.length !== 1 || out[0] !== `3/smcp,12${text}`) return "ack text not written back";
    return null;
  } catch (err) {
    return `socket.io / socket.io-parser: ${(err as Error).message}`;
  }
}
