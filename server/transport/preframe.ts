/**
 * Preframe: large text packets to WebSocket sessions leave as ready WebSocket frames (Buffers),
 * so an answer waiting for a slow Agent is external memory instead of a JS string in the young
 * generation.
 *
 * Why: every base64 chunk answer (a ~88 KB ack for a 64 KiB chunk) crosses the Server as a text
 * packet. While an Agent's socket is busy, engine.io keeps the packets it has not yet handed to ws
 * in the session's write buffer, as strings. An Agent that reads slowly thus keeps dozens of them
 * alive across garbage collections, and every scavenge copies each survivor (twice: within the
 * young generation, then into the old one); the pauses delay every other Agent's requests. A
 * Buffer's bytes live outside the V8 heap: GC moves only the small Buffer object.
 *
 * How: engine.io's WebSocket transport sends a packet whose `options.wsPreEncodedFrame` is set as
 * those bytes, through ws's `Sender#sendFrame` (socket.io's in-memory adapter uses the same path
 * for broadcasts). Here socket.io's `Client.writeToEngine` builds that frame for one long text
 * packet (a FIN text frame, opcode 1, unmasked as RFC 6455 §5.1 requires of a server, whose
 * payload is engine.io's message type `4` and then the packet's UTF-8) and hands engine.io the
 * frame with no string. The bytes on the wire are those ws would have written for the string.
 *
 * When: only while the session's transport is WebSocket and will send the frame as is
 * (`_canSendPreEncodedFrame`: no per-message deflate, a ws sender with `sendFrame`). engine.io
 * never moves a session off WebSocket once it is there, so a buffered packet is sent by that
 * transport or dropped with the session. A polling session (or one mid-upgrade) keeps the string
 * path; so do short packets (copying a few KiB is cheaper than a Buffer of its own).
 *
 * Departure from stock: wraps a method of socket.io's `Client` per instance and calls engine.io's
 * private `_canSendPreEncodedFrame`. `probePreframe` checks both on the installed classes at start.
 */
import { EventEmitter } from "node:events";
import { AckFrameText } from "./ack-bytes.ts";
import { probeWebSocketTransport, socketIoClient, wsSenderPrototype } from "./installed.ts";

/** Text packets shorter than this (UTF-16 code units) keep the string path. */
export const MIN_PREFRAMED_CHARS = 16 * 1024;

const FIN_TEXT = 0x81; // FIN bit + opcode 1 (text)
const ENGINE_MESSAGE = 0x34; // "4": engine.io's `message` packet type

interface WsTransport {
  readonly name: string;
  _canSendPreEncodedFrame(packet: { options?: { wsPreEncodedFrame?: unknown } }): boolean;
}

/** The parts of a socket.io server `Client` (one per engine.io session) used here. */
interface SocketIoClient {
  readonly conn: { readonly transport: unknown; readonly upgrading?: boolean };
  writeToEngine(encoded: unknown, opts: unknown): void;
}

/**
 * The frame header (RFC 6455 §5.2, server to client: no mask) for a text payload of
 * `payloadBytes`, followed by engine.io's `4` and then `text`, which count as the payload's first
 * bytes.
 */
export function textFrameHead(payloadBytes: number, text = ""): Buffer {
  const size = payloadBytes < 126 ? 2 : payloadBytes < 0x10000 ? 4 : 10;
  const head = Buffer.allocUnsafe(size + 1 + Buffer.byteLength(text, "utf8"));
  head[0] = FIN_TEXT;
  if (size === 2) head[1] = payloadBytes;
  else if (size === 4) {
    head[1] = 126;
    head.writeUInt16BE(payloadBytes, 2);
  } else {
    head[1] = 127;
    head.writeUInt32BE(Math.floor(payloadBytes / 2 ** 32), 2);
    head.writeUInt32BE(payloadBytes >>> 0, 6);
  }
  head[size] = ENGINE_MESSAGE;
  head.write(text, size + 1, "utf8");
  return head;
}

/** [head, body]: the whole frame of engine.io message `text`, as ws's `sendFrame` takes it. */
export function engineMessageFrame(text: string | AckFrameText): [Buffer, Buffer] {
  if (text instanceof AckFrameText) {
    const headBytes = Buffer.byteLength(text.head, "utf8");
    return [textFrameHead(1 + headBytes + text.body.length, text.head), text.body];
  }
  const body = Buffer.from(text, "utf8");
  return [textFrameHead(body.length + 1), body];
}

/** Whether `transport` is a WebSocket transport that sends a pre-encoded frame as is. */
function sendsFramesAsIs(transport: unknown): boolean {
  const t = transport as WsTransport | null;
  return (
    t?.name === "websocket" &&
    typeof t._canSendPreEncodedFrame === "function" &&
    t._canSendPreEncodedFrame({ options: { wsPreEncodedFrame: [] } })
  );
}

const patched = new WeakSet<object>();

/** Makes a socket.io `Client` send long text packets as frames on WebSocket (once). */
export function preframeLongTexts(client: unknown): boolean {
  const c = client as SocketIoClient | null;
  if (!c?.conn || typeof c.writeToEngine !== "function" || patched.has(c)) return false;
  patched.add(c);
  const writeToEngine = c.writeToEngine.bind(c);
  c.writeToEngine = (encoded: unknown, opts: unknown): void => {
    const text: unknown = Array.isArray(encoded) && encoded.length === 1 ? encoded[0] : encoded;
    const o = opts as { wsPreEncodedFrame?: unknown } | undefined;
    const ackBytes = text instanceof AckFrameText;
    if (
      !(ackBytes || (typeof text === "string" && text.length >= MIN_PREFRAMED_CHARS)) ||
      o?.wsPreEncodedFrame !== undefined ||
      c.conn.upgrading ||
      !sendsFramesAsIs(c.conn.transport)
    ) {
      // An ack kept as bytes (ack-bytes.ts) becomes text for any other way out.
      return writeToEngine(ackBytes ? [text.text()] : encoded, opts);
    }
    // A new options object: socket.io may share `opts` between the recipients of a broadcast.
    // (Copied, then the key added: V8 takes a slow path for a spread followed by a key.)
    // The empty string: engine.io stores no data for the packet, only the frame.
    const copy: { wsPreEncodedFrame?: unknown } = Object.assign({}, o);
    copy.wsPreEncodedFrame = engineMessageFrame(text);
    writeToEngine([""], copy);
  };
  return true;
}

/** Whether the installed socket.io, engine.io and ws support preframing: null, or why not. */
export function probePreframe(): string | null {
  const client = socketIoClient();
  if (typeof client === "string") return client;
  if (typeof client.writeToEngine !== "function") return "socket.io's Client has no writeToEngine";
  if (typeof wsSenderPrototype()?.sendFrame !== "function") return "ws's Sender has no sendFrame";
  try {
    const sender = { sendFrame: () => undefined };
    const ws = Object.assign(new EventEmitter(), { _sender: sender });
    const transport = probeWebSocketTransport(ws);
    if (!transport) return "engine.io has no WebSocket transport";
    if (!sendsFramesAsIs(transport)) {
      return "engine.io's WebSocket transport does not send pre-encoded frames";
    }
    return null;
  } catch (err) {
    return `engine.io's WebSocket transport: ${(err as Error).message}`;
  }
}
