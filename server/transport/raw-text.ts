/**
 * Text relayed as text (D13: the Server "relays the Computer's ack unchanged. It never parses or
 * rebuilds `blob`"): the Server's socket.io parser is socket.io-parser with two shortcuts, each a
 * fast path of its own.
 *
 * `raw_acks`: every `client:get_blob` answer crosses the Server as an ACK packet: the Computer's
 * ack in, the Agent's ack out. The standard parser JSON.parses the whole ack (a 64 KiB chunk is
 * ~88 KB of base64 text) and JSON.stringifies it again, only for the relay to pass it on
 * untouched. Here the Decoder reads only the header of a text ACK (`3/smcp,<id>`) and keeps the
 * data array's text as an `AckText`; the relay's ack callback receives it as its single argument
 * and hands it back to the Agent's ack; the Encoder writes `3/smcp,<agent id>` + the same text.
 * The Agent thus receives the Computer's ack byte for byte, and the Server never builds `blob`.
 * An ack that crosses to another node (Redis) is serialized by the adapter as the value it stands
 * for (`AckText#toJSON`), so every deployment runs the same relay.
 *
 * `raw_uploads`: every chunk of a base64 upload crosses the Server as a text EVENT
 * `client:put_blob`, the other way. The Decoder builds the payload's fields from the text's
 * skeleton (below) with each long string a slice of the text, never a copy, and remembers the
 * payload's JSON text; the relay checks and routes that payload like any other and forwards it
 * unchanged (D13: "forward the original payload"); the Encoder writes the remembered text. The
 * Computer thus receives the Agent's chunk byte for byte. The payload is a plain object with
 * real strings, so an adapter carrying it to another node serializes it as it is.
 *
 * Everything else (EVENT other than a text put_blob, BINARY_EVENT, BINARY_ACK for binary carriage
 * (D19), CONNECT, DISCONNECT, an ACK without data or with an unusual header, text with an escape
 * in a string) goes through socket.io-parser unchanged, so the clients (standard socket.io-client
 * Agents and Computers) see no difference.
 *
 * Malformed text: an ACK's data must be a JSON array, checked as the standard parser does without
 * building the long strings (`checkAckJson`). Text that is not one throws "invalid payload" like
 * the standard Decoder; socket.io then closes that Computer's connection and the relay answers its
 * requests in flight with 404 `disconnected` (D11): the Server never forwards text an Agent could
 * not decode. An upload event whose skeleton does not read goes to the standard Decoder, which
 * reports it as it always does. Size: the Decoder adds no limit of its own; engine.io's
 * `maxHttpBufferSize` has already refused any larger message, and the text kept (a slice of that
 * message) lives only until the relay answers or drops the request.
 *
 * What an answer carried (`a2c_relay_resource_bytes_total`) is counted during the check, from the
 * length and padding of `blob`, never by decoding it.
 *
 * Departure from stock: a custom parser is a public socket.io option, but the Decoder reads
 * socket.io-parser's private `reconstructor` (a binary packet waiting for its attachments), and
 * the relay relies on socket.io handing an ACK's data to the ack callback, and an event's
 * payload to its handler, as decoded. `probeRawAcks` and `probeRawUploads` check both at start.
 */
import { Socket as IoSocket } from "socket.io";
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import {
  Events,
  base64LenientLength,
  readPacketHeader,
  writePacketHeader,
  type PacketHeader,
} from "@a2c-smcp/protocol";

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

/** Where one long string token lies: the indexes of its quotes. */
interface Span {
  open: number;
  close: number;
}

/** A JSON text as its skeleton: the skeleton's value, and the long strings it stands in for. */
interface Skeleton {
  value: unknown;
  longs: Span[];
}

/**
 * `json` read as its skeleton: the text with each long string replaced by a short marker string
 * (`MARK` and the string's index in `longs`). Each string token is found with indexOf and its
 * content consumed by PLAIN_CONTENT, or, when the text holds no backslash and no control character
 * at all, runs to the next quote. When every token is plain (no escape, no control character), any
 * content between its quotes is valid string content, so the text is valid JSON exactly when its
 * skeleton is; that skeleton is a few hundred bytes for a chunk. A token that is not plain
 * (escapes, control characters, no closing quote) answers `"escaped"`: the whole text must be
 * read. null: the text is not JSON.
 */
function skeletonOf(json: string): Skeleton | "escaped" | null {
  const plain = allPlain(json);
  const longs: Span[] = [];
  let skeleton = "";
  let from = 0;
  for (;;) {
    const open = json.indexOf('"', from);
    if (open < 0) break;
    let close: number;
    if (plain) {
      close = json.indexOf('"', open + 1);
    } else {
      PLAIN_CONTENT.lastIndex = open + 1;
      PLAIN_CONTENT.test(json);
      close = PLAIN_CONTENT.lastIndex;
    }
    if (close < 0 || json.charCodeAt(close) !== 0x22 /* " */) return "escaped";
    if (close - open - 1 > LONG_STRING) {
      skeleton += `${json.slice(from, open)}"${MARK}${MARK}${longs.length}"`;
      longs.push({ open, close });
    } else {
      skeleton += json.slice(from, close + 1);
    }
    from = close + 1;
  }
  skeleton += json.slice(from);
  try {
    return { value: JSON.parse(skeleton) as unknown, longs };
  } catch {
    return null;
  }
}

/** The long string a skeleton's `value` marks, or undefined when `value` is not a marker. */
function markedSpan(s: Skeleton, value: unknown): Span | undefined {
  if (typeof value !== "string" || !value.startsWith(MARK)) return undefined;
  return s.longs[Number(value.slice(1))];
}

/**
 * Checks that `json` is a JSON array and measures what its first argument's `blob` / `body`
 * string carries, from its skeleton (`skeletonOf`; every ack socket.io-client's JSON.stringify
 * writes for a chunk reads that way). Returns that count, or null if the text is not a JSON array.
 */
export function checkAckJson(json: string): Carried | null {
  if (json.charCodeAt(0) !== 0x5b /* [ */) return null;
  const s = skeletonOf(json);
  if (s === "escaped") return fullCheck(json);
  if (s === null || !Array.isArray(s.value)) return null;
  const found = carriedString(s.value[0]);
  if (found === null) return NOTHING;
  const long = markedSpan(s, found.value);
  if (long === undefined) {
    return found.value.startsWith(MARK) ? NOTHING : carriedBy(found.key, found.value);
  }
  if (found.key === "body") {
    const bytes = Buffer.byteLength(json.slice(long.open + 1, long.close), "utf8");
    return { bytes, carriage: "inline" };
  }
  const n = long.close - long.open - 1;
  const bytes = base64LenientLength(
    n,
    json.charCodeAt(long.close - 1),
    json.charCodeAt(long.close - 2),
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

/**
 * The header of a text packet of `type` followed by its data array (`start` at its `[`;
 * protocol/sizing.ts reads it as socket.io-parser does), or null for anything else: that takes
 * the standard path.
 */
function dataHeader(text: string, type: PacketType): PacketHeader | null {
  const h = readPacketHeader(text);
  return h?.type === type && text.charCodeAt(h.start) === OPEN_BRACKET ? h : null;
}

/** The first character of a plain (text) ACK packet: socket.io-parser's type 3. */
const ACK_TYPE = 0x33;
/** The first character of a plain (text) EVENT packet: socket.io-parser's type 2. */
const EVENT_TYPE = 0x32;

/** The start of a text put_blob event's data as socket.io-client's JSON.stringify writes it. */
const PUT_BLOB_PREFIX = `[${JSON.stringify(Events.PutBlob)},`;

/** Each upload payload the Decoder built, with the JSON text it was read from. */
const UPLOAD_TEXTS = new WeakMap<object, string>();

/**
 * The payload of a text `client:put_blob` event from its data array's text (`data`, which
 * starts with `PUT_BLOB_PREFIX`), its long strings slices of that text; null when the text is
 * anything else (more arguments, an escape in a string, a long string that is not one of the
 * payload's own values): the standard Decoder reads it then. The payload is remembered with its
 * text (`uploadText`).
 */
function readUploadPayload(data: string): Record<string, unknown> | null {
  if (data.charCodeAt(data.length - 1) !== 0x5d /* ] */) return null;
  const s = skeletonOf(data);
  if (s === null || s === "escaped" || !Array.isArray(s.value) || s.value.length !== 2) return null;
  const payload: unknown = s.value[1];
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  const fields = payload as Record<string, unknown>;
  let restored = 0;
  for (const key of Object.keys(fields)) {
    const long = markedSpan(s, fields[key]);
    if (long === undefined) continue;
    // An assignment to `__proto__` would set the prototype, not the field JSON.parse made.
    if (key === "__proto__") return null;
    fields[key] = data.slice(long.open + 1, long.close);
    restored++;
  }
  if (restored !== s.longs.length) return null;
  UPLOAD_TEXTS.set(fields, data.slice(PUT_BLOB_PREFIX.length, -1));
  return fields;
}

/** The JSON text a payload of `readUploadPayload` was read from, or undefined for any other value. */
export function uploadText(payload: unknown): string | undefined {
  return typeof payload === "object" && payload !== null ? UPLOAD_TEXTS.get(payload) : undefined;
}

/** Which text the Decoder keeps as text: the fast paths `raw_acks` and `raw_uploads`. */
export interface RawText {
  readonly acks: boolean;
  readonly uploads: boolean;
}

export class RawTextDecoder extends Decoder {
  /** What this Decoder keeps as text (the parser's, `rawTextParser`). */
  protected readonly raw: RawText = { acks: true, uploads: true };

  override add(obj: unknown): void {
    // Only a text ACK or EVENT is read here; every other message (the text part of a binary
    // packet, binary attachments) costs one character compare (D102). While a binary packet
    // waits for its attachments, a text message is a protocol error that the standard Decoder
    // reports.
    if (typeof obj === "string" && !this.waitsForAttachments()) {
      const type = obj.charCodeAt(0);
      if (type === ACK_TYPE && this.raw.acks && this.addAck(obj)) return;
      if (type === EVENT_TYPE && this.raw.uploads && this.addUpload(obj)) return;
    }
    super.add(obj);
  }

  private addAck(text: string): boolean {
    const header = dataHeader(text, PacketType.ACK);
    if (header?.id === undefined) return false;
    const json = text.slice(header.start);
    const carried = checkAckJson(json);
    if (carried === null) throw new Error("invalid payload");
    const args = new AckText(json, carried);
    this.decoded({ type: PacketType.ACK, nsp: header.nsp, id: header.id, data: [args] });
    return true;
  }

  private addUpload(text: string): boolean {
    // Every other event (a pull's requests among them) is let go before anything is sliced.
    const h = dataHeader(text, PacketType.EVENT);
    if (!h || !text.startsWith(PUT_BLOB_PREFIX, h.start)) return false;
    const payload = readUploadPayload(text.slice(h.start));
    if (payload === null) return false;
    const packet: Packet = { type: PacketType.EVENT, nsp: h.nsp, data: [Events.PutBlob, payload] };
    if (h.id !== undefined) packet.id = h.id;
    this.decoded(packet);
    return true;
  }

  private decoded(packet: Packet): void {
    this.emitReserved("decoded", packet);
  }

  /** A binary packet is waiting for its attachments (socket.io-parser's private field). */
  waitsForAttachments(): boolean {
    return Boolean((this as unknown as { reconstructor?: unknown }).reconstructor);
  }
}

/** Writes the text a RawTextDecoder kept: an `AckText`, an upload payload's JSON. */
export class RawTextEncoder extends Encoder {
  override encode(packet: Packet): unknown[] {
    const data: unknown = packet.data;
    if (Array.isArray(data)) {
      if (packet.type === PacketType.ACK && data.length === 1 && data[0] instanceof AckText) {
        return [writePacketHeader(packet.type, packet.nsp, packet.id) + data[0].json];
      }
      if (packet.type === PacketType.EVENT && data.length === 2 && data[0] === Events.PutBlob) {
        const json = uploadText(data[1]);
        if (json !== undefined) {
          return [
            `${writePacketHeader(packet.type, packet.nsp, packet.id)}${PUT_BLOB_PREFIX}${json}]`,
          ];
        }
      }
    }
    return super.encode(packet) as unknown[];
  }
}

/** The `parser` option of socket.io's Server, keeping as text what `raw` says. */
export function rawTextParser(raw: RawText): {
  protocol: number;
  PacketType: typeof PacketType;
  Encoder: typeof RawTextEncoder;
  Decoder: typeof RawTextDecoder;
} {
  class Configured extends RawTextDecoder {
    protected override readonly raw = raw;
  }
  return { protocol, PacketType, Encoder: RawTextEncoder, Decoder: Configured };
}

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
    const decoder = new RawTextDecoder();
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
    const out = relayed ? new RawTextEncoder().encode(relayed) : [];
    if (out.length !== 1 || out[0] !== `3/smcp,12${text}`) return "ack text not written back";
    return null;
  } catch (err) {
    return `socket.io / socket.io-parser: ${(err as Error).message}`;
  }
}

/**
 * Whether the installed socket.io and socket.io-parser relay a text put_blob event as text: null,
 * or why not. The event goes through the real parser classes (after a binary event that waited
 * for its attachment), socket.io's `Socket#onevent` must hand its handler the payload the Decoder
 * built, and the packet socket.io builds to emit that payload must encode as the same text.
 */
export function probeRawUploads(): string | null {
  try {
    const decoded: Packet[] = [];
    const decoder = new RawTextDecoder();
    decoder.on("decoded", (p: Packet) => decoded.push(p));
    decoder.add('51-/smcp,["e",{"_placeholder":true,"num":0}]');
    decoder.add(Buffer.from([1]));
    const payload = `{"agent":"a","computer":"c","chunk_offset":0,"eof":true,"blob":"${"QUJD".repeat(32)}"}`;
    decoder.add(`2/smcp,3${PUT_BLOB_PREFIX}${payload}]`);
    const event = decoded[1];
    const data = event?.data as unknown[] | undefined;
    if (decoded.length !== 2 || event?.type !== PacketType.EVENT || event.id !== 3 || !data) {
      return "socket.io-parser decodes packets differently";
    }
    if (
      uploadText(data[1]) !== payload ||
      (data[1] as { blob?: unknown }).blob !== "QUJD".repeat(32)
    ) {
      return "put_blob payload not read from its text";
    }
    let handled: unknown[] = [];
    const io = IoSocket.prototype as unknown as { onevent(this: unknown, packet: Packet): void };
    io.onevent.call(
      { ack: () => () => undefined, dispatch: (args: unknown[]) => (handled = args) },
      event,
    );
    if (handled[0] !== Events.PutBlob || handled[1] !== data[1]) {
      return "socket.io does not hand an event's decoded payload to its handler as it is";
    }
    const out = new RawTextEncoder().encode({
      type: PacketType.EVENT,
      nsp: "/smcp",
      id: 8,
      data: [Events.PutBlob, handled[1]],
    });
    if (out.length !== 1 || out[0] !== `2/smcp,8${PUT_BLOB_PREFIX}${payload}]`) {
      return "put_blob text not written back";
    }
    return null;
  } catch (err) {
    return `socket.io / socket.io-parser: ${(err as Error).message}`;
  }
}
