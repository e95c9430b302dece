/**
 * Ack bytes: a long text ACK from a WebSocket client stays the bytes of its WebSocket message from
 * the moment ws hands it over until the Agent's frame is written, so a large base64 chunk never
 * becomes a JS string on the Server.
 *
 * Why: engine.io decodes every text message into a string (`data.toString()`), and preframe.ts
 * encodes the relayed answer back into a Buffer. For an answer of a few hundred KiB or more that
 * is most of the Server's work per chunk: V8 puts a string that long on fresh large-object pages,
 * whose first touch costs several times the UTF-8 decode itself, and each one also counts toward
 * the old generation. The Server only checks the text (ack-text.ts) and passes it on (D13).
 *
 * How: engine.io's WebSocket transport listens to ws's `message` event and passes binary data on
 * as is. Here that listener is wrapped: a text message long enough to matter that starts with
 * engine.io's `4` and socket.io's ACK type `3` is passed on as binary instead, minus the `4`,
 * and remembered as text (`isAckMessage`). engine.io then hands the Buffer to socket.io, whose
 * decoder (raw-acks.ts) reads the ACK header and checks the JSON on the bytes
 * (`checkAckBytes`); the `AckText` keeps the bytes, and the encoder hands the Agent's client an
 * `AckFrameText` (its header + those bytes), which preframe.ts writes as one text frame of two
 * parts with no copy. Anything else (short messages, other packet types, a header the decoder
 * does not read, a message while binary attachments are awaited) is decoded to text and goes the
 * standard way, so the wire is unchanged: the Agent gets the Computer's bytes (D13).
 *
 * Departure from stock: replaces engine.io's listener on ws's `message` event with a wrapper, and
 * relies on engine.io passing binary data to socket.io untouched. `probeAckBytes` checks both on
 * the installed classes at start.
 */
import { EventEmitter } from "node:events";
import { probeWebSocketTransport } from "./installed.ts";

/** Text messages shorter than this (bytes) are decoded as usual: a string is cheap for them. */
export const MIN_ACK_BYTES = 16 * 1024;

const ENGINE_MESSAGE = 0x34; // "4": engine.io's `message` packet type
const IO_ACK = 0x33; // "3": socket.io's ACK packet type

/** ACK messages passed to engine.io as bytes; they are text (valid UTF-8, checked by ws). */
const ackMessages = new WeakSet<Buffer>();

/** Whether `data` is a text ACK message passed on as bytes (its text starts with `3`). */
export function isAckMessage(data: unknown): data is Buffer {
  return Buffer.isBuffer(data) && ackMessages.has(data);
}

/** The ACK packet for an Agent: socket.io's header (`3/smcp,<id>`) and the Computer's bytes. */
export class AckFrameText {
  constructor(
    readonly head: string,
    readonly body: Buffer,
  ) {}

  /** The packet as text (for a session that cannot take a ready frame). */
  text(): string {
    return this.head + this.body.toString("utf8");
  }
}

type MessageListener = (data: unknown, isBinary: boolean) => void;

interface WsLike {
  listeners(event: "message"): unknown[];
  removeListener(event: "message", fn: MessageListener): unknown;
  on(event: "message", fn: MessageListener): unknown;
}

const patched = new WeakSet<object>();

/** Wraps engine.io's `message` listener of a WebSocket transport (once); false if it cannot. */
export function keepAckBytes(transport: unknown): boolean {
  const t = transport as { readonly name?: string; readonly socket?: WsLike } | null;
  const ws = t?.name === "websocket" ? t.socket : undefined;
  if (!ws || patched.has(ws) || typeof ws.listeners !== "function") return false;
  const listeners = ws.listeners("message");
  const engineListener = listeners[0];
  if (listeners.length !== 1 || typeof engineListener !== "function") return false;
  patched.add(ws);
  const onMessage = engineListener as MessageListener;
  ws.removeListener("message", onMessage);
  ws.on("message", (data, isBinary) => {
    if (
      !isBinary &&
      Buffer.isBuffer(data) &&
      data.length >= MIN_ACK_BYTES &&
      data[0] === ENGINE_MESSAGE &&
      data[1] === IO_ACK
    ) {
      const ack = data.subarray(1);
      ackMessages.add(ack);
      onMessage(ack, true);
      return;
    }
    onMessage(data, isBinary);
  });
  return true;
}

/** The parts of an engine.io session followed here. */
interface Session {
  readonly transport: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
}

/** Applies `keepAckBytes` to a session's transport now and after an upgrade to WebSocket. */
export function keepSessionAckBytes(session: Session): void {
  keepAckBytes(session.transport);
  session.on("upgrade", (transport) => keepAckBytes(transport));
}

/** Whether the installed engine.io passes a wrapped ACK message on as bytes: null, or why not. */
export function probeAckBytes(): string | null {
  try {
    const ws = new EventEmitter();
    const transport = probeWebSocketTransport(ws) as
      (EventEmitter & { name?: string; socket?: unknown }) | null;
    if (!transport) return "engine.io has no WebSocket transport";
    if (transport.socket !== ws) return "engine.io's WebSocket transport keeps no ws socket";
    if (!keepAckBytes(transport)) {
      return "engine.io's WebSocket transport has no single message listener";
    }
    const packets: { type?: unknown; data?: unknown }[] = [];
    transport.on("packet", (p: { type?: unknown; data?: unknown }) => packets.push(p));
    const text = `43/smcp,1["${"x".repeat(MIN_ACK_BYTES)}"]`;
    ws.emit("message", Buffer.from(text), false);
    const [packet] = packets;
    if (
      packets.length !== 1 ||
      packet?.type !== "message" ||
      !isAckMessage(packet.data) ||
      packet.data.toString() !== text.slice(1)
    ) {
      return "engine.io does not pass binary WebSocket messages on as they are";
    }
    return null;
  } catch (err) {
    return `engine.io's WebSocket transport: ${(err as Error).message}`;
  }
}
