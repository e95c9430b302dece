/**
 * Batched writes: fewer writes per answer on WebSocket sessions. The parts of one socket.io
 * packet leave in one engine.io flush, and one flush leaves in one `writev`.
 *
 * A binary-carriage chunk (D19) crosses the Server as one socket.io packet encoded in two
 * engine.io packets: the ack's text part and its attachment. Stock socket.io writes them with
 * two `conn.write` calls, and engine.io flushes after each: the first part is sent at once, the
 * attachment waits in the write buffer until the transport reports the first write done (a later
 * event-loop turn) and then goes out in a second flush. engine.io's WebSocket transport then
 * hands each packet of a flush to ws separately, and ws writes each frame to the TCP socket on its
 * own. So every binary ack cost the Server two `writev` calls, an extra event-loop turn, and the
 * Agent two wake-ups; system calls and wake-ups are the largest fixed cost of a chunk.
 *
 * Here (1) socket.io's `Client.writeToEngine` writes every part with engine.io's flush held back
 * and flushes once after the last part, and (2) the WebSocket transport's `send(packets)` runs with
 * the TCP socket corked, so the frames of one flush reach the kernel in one `writev`. Bytes, their
 * order and the frame boundaries are what stock socket.io sends (the Agent is a stock client).
 *
 * Why this is safe, from the installed code (versions pinned in server/package.json):
 * - `writeToEngine` only loops `conn.write(part, opts)`; engine.io's `write` pushes the packet to
 *   `writeBuffer` and calls `flush()`, the prototype method shadowed here by an own no-op for the
 *   duration of the loop (removed in `finally`), then called once. A flush that finds the
 *   transport busy leaves the packets in `writeBuffer` for the drain, as before.
 * - `WebSocket.send(packets)` encodes and calls `ws.send` for every packet synchronously; ws's
 *   per-frame cork nests in ours (net.Socket counts corks); `uncork` in the `finally` writes the
 *   buffered frames before `send` returns.
 * Departure from stock: wraps a method of socket.io's `Client` (the only wrapper of it), shadows
 * engine.io's private session `flush`, and reads the TCP socket under engine.io's transport
 * (`socket._socket`). `probeBatchWrites` sends a packet through the installed classes at start.
 */
import { EventEmitter } from "node:events";
import {
  engineSessionPrototype,
  memoryWebSocket,
  probeWebSocketTransport,
  socketIoClient,
} from "./installed.ts";

interface Corkable {
  cork(): void;
  uncork(): void;
}

/** The parts of an engine.io server transport this module touches. */
interface EngineTransport {
  readonly name: string;
  send(packets: unknown[]): void;
  readonly socket?: { readonly _socket?: Corkable };
}

/** The parts of an engine.io server session (engine.io `Socket`). */
export interface BatchableSession {
  readonly transport: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
}

/** The parts of a socket.io server `Client` (one per engine.io session). */
interface SocketIoClient {
  readonly conn: { flush(): void };
  writeToEngine(encoded: unknown, opts: unknown): void;
}

const patched = new WeakSet<object>();
const noop = (): void => undefined;

/** Wraps `transport.send` of a WebSocket transport (once) so one flush is one write. */
export function corkSends(transport: unknown): boolean {
  const t = transport as EngineTransport | null;
  if (!t || t.name !== "websocket" || typeof t.send !== "function" || patched.has(t)) return false;
  patched.add(t);
  const send = t.send.bind(t);
  t.send = (packets: unknown[]): void => {
    const tcp = t.socket?._socket;
    if (!tcp || packets.length < 2) return send(packets);
    tcp.cork();
    try {
      send(packets);
    } finally {
      tcp.uncork();
    }
  };
  return true;
}

/** Applies `corkSends` to a session's transport now and after an upgrade to WebSocket. */
export function corkSessionSends(session: BatchableSession): void {
  corkSends(session.transport);
  session.on("upgrade", (transport) => corkSends(transport));
}

/** Makes a socket.io `Client` write all parts of a packet before engine.io flushes (once). */
export function flushPacketsWhole(client: unknown): boolean {
  const c = client as SocketIoClient | null;
  const conn = c?.conn;
  if (!c || !conn || typeof c.writeToEngine !== "function" || patched.has(c)) return false;
  if (typeof conn.flush !== "function" || Object.hasOwn(conn, "flush")) return false;
  patched.add(c);
  const writeToEngine = c.writeToEngine.bind(c);
  c.writeToEngine = (encoded: unknown, opts: unknown): void => {
    if (!Array.isArray(encoded) || encoded.length < 2) return writeToEngine(encoded, opts);
    conn.flush = noop;
    try {
      writeToEngine(encoded, opts);
    } finally {
      delete (conn as { flush?: unknown }).flush;
    }
    conn.flush();
  };
  return true;
}

/**
 * Whether batched writes work with the installed socket.io, engine.io and ws: null, or why not.
 * A binary packet (a text part and an attachment) goes through socket.io's real
 * `Client.writeToEngine`, engine.io's session `write`/`flush` and WebSocket transport, and a real
 * ws WebSocket onto a socket in memory: with both wrappers on, its two frames must reach the
 * socket in one write, byte for byte what ws writes for them.
 */
export function probeBatchWrites(): string | null {
  const client = socketIoClient();
  if (typeof client === "string") return client;
  try {
    const { ws, socket } = memoryWebSocket();
    const transport = probeWebSocketTransport(ws);
    if (!transport) return "engine.io has no WebSocket transport";
    const session = Object.assign(Object.create(engineSessionPrototype) as object, {
      readyState: "open",
      writeBuffer: [],
      packetsFn: [],
      sentCallbackFn: [],
      transport,
      server: new EventEmitter(),
    });
    const io = Object.assign(Object.create(client) as object, { conn: session });
    if (!flushPacketsWhole(io) || !corkSends(transport)) {
      return "socket.io's Client or engine.io's WebSocket transport has changed shape";
    }
    const text = '451-/smcp,["probe",{"_placeholder":true,"num":0}]';
    const attachment = Buffer.from([1, 2, 3]);
    (io as unknown as SocketIoClient).writeToEngine([text, attachment], {});
    const expected = Buffer.concat([
      Buffer.from([0x81, 1 + text.length]),
      Buffer.from(`4${text}`),
      Buffer.from([0x82, attachment.length]),
      attachment,
    ]);
    const written = socket.writes.length === 1 ? Buffer.concat(socket.writes[0]!) : null;
    return written?.equals(expected)
      ? null
      : "the two frames of a packet did not reach the socket in one write, as ws frames them";
  } catch (err) {
    return `socket.io / engine.io / ws: ${(err as Error).message}`;
  }
}
