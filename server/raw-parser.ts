/**
 * The Server's socket.io parser: socket.io-parser with one shortcut for plain (text) ACK packets.
 *
 * Every `client:get_blob` answer crosses the Server as an ACK packet: the Computer's ack in, the
 * Agent's ack out. The standard parser JSON.parses the whole ack (a 64 KiB chunk is ~88 KB of
 * base64 text) and JSON.stringifies it again, only for the relay to pass it on untouched (D13).
 * Here the Decoder reads only the header of a text ACK (`3/smcp,<id>`) and keeps the data array's
 * text as a `RawArgs`; the relay's ack callback receives it as its single argument and hands it
 * back to the Agent's ack; the Encoder writes `3/smcp,<agent id>` + the same text. The Agent thus
 * receives the Computer's ack byte for byte (D13), and the Server never builds `blob`.
 *
 * Everything else — EVENT, BINARY_EVENT, BINARY_ACK (binary carriage, D19), CONNECT, DISCONNECT,
 * an ACK without data or with an unusual header — goes through socket.io-parser unchanged, so the
 * clients (standard socket.io-client Agents and Computers) see no difference.
 *
 * Malformed ACK text: the data must be a JSON array, checked as the standard parser does (without
 * building long strings, raw-args.ts). Text that is not one throws "invalid payload" like the
 * standard Decoder; socket.io then closes that Computer's connection and the relay answers its
 * requests in flight with 404 `disconnected` (D11) — the Server never forwards text an Agent
 * could not decode. Size: the Decoder adds no limit of its own; engine.io's `maxHttpBufferSize`
 * has already refused any larger message, and a RawArgs (a slice of that message) lives only
 * until the relay answers or drops the request.
 *
 * Not with Redis (or any custom adapter or link): the Redis adapter msgpack-encodes acks that cross
 * nodes, which would turn a RawArgs into a plain object. `rawAckParserOption` picks the standard
 * parser there. `A2C_SERVER_RAW_ACKS=0` also selects the standard parser (comparison, fallback).
 */
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import { RawArgs, checkAckJson } from "./raw-args.ts";

const ACK_TYPE = 0x33; // "3"
const SLASH = 0x2f;
const OPEN_BRACKET = 0x5b;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Ack ids are small counters; a longer run of digits goes the standard way. */
const MAX_ID_DIGITS = 15;

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

export class RawAckDecoder extends Decoder {
  override add(obj: unknown): void {
    // While a binary packet waits for its attachments, a text message is a protocol error that
    // the standard Decoder reports.
    if (typeof obj === "string" && !this.reconstructing()) {
      const header = readAckHeader(obj);
      if (header) {
        const json = obj.slice(header.start);
        const carried = checkAckJson(json);
        if (carried === null) throw new Error("invalid payload");
        const packet: Packet = {
          type: PacketType.ACK,
          nsp: header.nsp,
          id: header.id,
          data: [new RawArgs(json, carried)],
        };
        this.emitReserved("decoded", packet);
        return;
      }
    }
    super.add(obj);
  }

  private reconstructing(): boolean {
    return Boolean((this as unknown as { reconstructor?: unknown }).reconstructor);
  }
}

export class RawAckEncoder extends Encoder {
  override encode(packet: Packet): unknown[] {
    const data: unknown = packet.data;
    if (
      packet.type === PacketType.ACK &&
      Array.isArray(data) &&
      data.length === 1 &&
      data[0] instanceof RawArgs
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
  Encoder: RawAckEncoder,
  Decoder: RawAckDecoder,
};

/** What decides the parser: the Server options that replace in-memory routing. */
export interface ParserChoice {
  redis?: unknown;
  adapter?: unknown;
  link?: unknown;
}

/**
 * `{ parser: rawAckParser }` for a single in-memory Server, `{}` (socket.io's standard parser)
 * with Redis, a custom adapter or link, or `A2C_SERVER_RAW_ACKS=0`.
 */
export function rawAckParserOption(
  choice: ParserChoice,
  env: NodeJS.ProcessEnv = process.env,
): { parser?: typeof rawAckParser } {
  if (choice.redis || choice.adapter || choice.link) return {};
  if (env.A2C_SERVER_RAW_ACKS === "0") return {};
  return { parser: rawAckParser };
}
