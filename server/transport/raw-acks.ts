/**
 * Raw acks: the Server's socket.io parser is socket.io-parser with one shortcut for plain (text)
 * ACK packets.
 *
 * Every `client:get_blob` answer crosses the Server as an ACK packet: the Computer's ack in, the
 * Agent's ack out. The standard parser JSON.parses the whole ack (a 64 KiB chunk is ~88 KB of
 * base64 text) and JSON.stringifies it again, only for the relay to pass it on untouched (D13).
 * Here the Decoder reads only the header of a text ACK (`3/smcp,<id>`) and keeps the data array's
 * text as an `AckText`; the relay's ack callback receives it as its single argument and hands it
 * back to the Agent's ack; the Encoder writes `3/smcp,<agent id>` + the same text. The Agent thus
 * receives the Computer's ack byte for byte (D13), and the Server never builds `blob`. An ack
 * that crosses to another node (Redis) is serialized by the adapter as the value it stands for
 * (ack-text.ts), so every deployment runs the same relay.
 *
 * Everything else (EVENT, BINARY_EVENT, BINARY_ACK for binary carriage (D19), CONNECT,
 * DISCONNECT, an ACK without data or with an unusual header) goes through socket.io-parser
 * unchanged, so the clients (standard socket.io-client Agents and Computers) see no difference.
 *
 * Malformed ACK text: the data must be a JSON array, checked as the standard parser does (without
 * building long strings, ack-text.ts). Text that is not one throws "invalid payload" like the
 * standard Decoder; socket.io then closes that Computer's connection and the relay answers its
 * requests in flight with 404 `disconnected` (D11): the Server never forwards text an Agent
 * could not decode. Size: the Decoder adds no limit of its own; engine.io's `maxHttpBufferSize`
 * has already refused any larger message, and an AckText (a slice of that message) lives only
 * until the relay answers or drops the request.
 *
 * Departure from stock: a custom parser is a public socket.io option, but the Decoder reads
 * socket.io-parser's private `reconstructor` (a binary packet waiting for its attachments), and
 * the relay relies on socket.io handing an ACK's data to the ack callback as decoded.
 * `probeRawAcks` checks both parsers against the installed socket.io-parser at start.
 */
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import { AckFrameText, isAckMessage } from "./ack-bytes.ts";
import { AckText, checkAckBytes, checkAckJson } from "./ack-text.ts";

const ACK_TYPE = 0x33; // "3"
const SLASH = 0x2f;
const OPEN_BRACKET = 0x5b;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Ack ids are small counters; a longer run of digits goes the standard way. */
const MAX_ID_DIGITS = 15;
/** Longer headers of an ACK kept as bytes (a namespace name of hundreds of bytes) are decoded. */
const MAX_HEADER_BYTES = 256;

interface AckHeader {
  nsp: string;
  id: number;
  /** Index of the data array's `[`. */
  start: number;
}

/**
 * `3[<nsp>,]<id>[` as socket.io-parser reads it (the namespace runs to the first comma), or null
 * for anything else (no id, no data, non-digit id) — those take the standard path.
 */
export function readAckHeader(text: string): AckHeader | null {
  if (text.charCodeAt(0) !== ACK_TYPE) return null;
  let i = 1;
  let nsp = "/";
  if (text.charCodeAt(1) === SLASH) {
    const comma = text.indexOf(",", 1);
    if (comma < 0) return null;
    nsp = text.slice(1, comma);
    i = comma + 1;
  }
  const idStart = i;
  for (let c = text.charCodeAt(i); c >= DIGIT_0 && c <= DIGIT_9; c = text.charCodeAt(++i));
  if (i === idStart || i - idStart > MAX_ID_DIGITS) return null;
  if (text.charCodeAt(i) !== OPEN_BRACKET) return null;
  return { nsp, id: Number(text.slice(idStart, i)), start: i };
}

/**
 * An ACK header at the start of `bytes` (ack-bytes.ts), as `readAckHeader` reads it, or null.
 * Only an all-ASCII header is read here (its `start` is then a byte index too).
 */
export function readAckHeaderBytes(bytes: Buffer): AckHeader | null {
  const open = bytes.subarray(0, MAX_HEADER_BYTES + 1).indexOf(OPEN_BRACKET);
  if (open < 0) return null;
  const header = readAckHeader(bytes.toString("utf8", 0, open + 1));
  return header?.start === open ? header : null;
}

export class AckTextDecoder extends Decoder {
  override add(obj: unknown): void {
    if (isAckMessage(obj)) return this.addAckBytes(obj);
    // While a binary packet waits for its attachments, a text message is a protocol error that
    // the standard Decoder reports.
    if (typeof obj === "string" && !this.waitsForAttachments()) {
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

  /** A text ACK message kept as its bytes (ack-bytes.ts); one it cannot read is decoded. */
  private addAckBytes(bytes: Buffer): void {
    const header = this.waitsForAttachments() ? null : readAckHeaderBytes(bytes);
    if (!header) return this.add(bytes.toString("utf8"));
    const json = bytes.subarray(header.start);
    const carried = checkAckBytes(json);
    if (carried === null) throw new Error("invalid payload");
    this.emitAck(header, new AckText(json, carried));
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
      return [this.ackText(head, data[0])];
    }
    return super.encode(packet) as unknown[];
  }

  protected ackText(head: string, args: AckText): unknown {
    return head + args.json;
  }
}

/**
 * Writes an ack that arrived as bytes as an `AckFrameText`, which only preframe.ts's writer
 * takes: the Server uses it with ack-bytes.ts, and only when preframe is on.
 */
export class AckBytesEncoder extends AckTextEncoder {
  protected override ackText(head: string, args: AckText): unknown {
    const bytes = args.bytes;
    return bytes ? new AckFrameText(head, bytes) : head + args.json;
  }
}

/** The `parser` option of socket.io's Server. */
export const rawAckParser = {
  protocol,
  PacketType,
  Encoder: AckTextEncoder,
  Decoder: AckTextDecoder,
};

/** The same, writing acks that arrived as bytes as bytes (ack-bytes.ts with preframe.ts). */
export const rawAckBytesParser = { ...rawAckParser, Encoder: AckBytesEncoder };

/** Whether the installed socket.io-parser works with these parsers: null, or why not. */
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
    const args: unknown = ack?.data;
    if (
      decoded.length !== 2 ||
      ack?.type !== PacketType.ACK ||
      ack.id !== 7 ||
      !Array.isArray(args) ||
      !(args[0] instanceof AckText) ||
      args[0].json !== text
    ) {
      return "socket.io-parser decodes packets differently";
    }
    const out = new AckTextEncoder().encode({ ...ack, id: 12 });
    if (out.length !== 1 || out[0] !== `3/smcp,12${text}`) return "ack text not written back";
    return null;
  } catch (err) {
    return `socket.io-parser: ${(err as Error).message}`;
  }
}
