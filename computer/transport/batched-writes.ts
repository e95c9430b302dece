/**
 * Batched writes (fast path `batch_writes`): the parts of one socket.io packet leave in one
 * engine.io-client flush, and one flush leaves in one `writev` on the WebSocket transport.
 *
 * Every binary answer (D19) is one socket.io packet encoded in two engine.io packets (the ack's
 * text part and its attachment). Stock socket.io-client writes them one by one and
 * engine.io-client flushes after each: the text part goes at once, the attachment waits for the
 * transport's drain (the next tick) and goes in a second flush, and ws writes each frame to the
 * TCP socket on its own. That is two system calls, an extra event-loop turn and two wake-ups of
 * the Server per chunk. Here (1) `Manager._packet` writes every part with the engine's flush held
 * back and flushes once, and (2) the WebSocket transport's `write(packets)` runs with the TCP
 * socket corked. Same bytes, same order, same frames.
 *
 * What it relies on (socket.io-client 4.8, engine.io-client 6.6, ws 8): `Manager._packet`
 * encodes and loops `engine.write(part)`, which pushes to `writeBuffer` and calls `this.flush()`:
 * the prototype method, shadowed by an own no-op for the loop and removed in `finally`, then
 * called once (it does nothing while the transport is busy or upgrading, leaving the packets for
 * the drain, as before). `write(packets)` calls `ws.send` for every packet synchronously; ws's
 * per-frame cork nests in ours and `uncork` writes before `write` returns. Every part still goes
 * through `writeBuffer` and `transport.send` before the engine's "drain", which is what
 * lent-buffers.ts relies on to reuse a lent Buffer.
 */
import {
  EngineSocket,
  Manager,
  NodeWebSocket,
  isWebSocketTransport,
  onEveryTransport,
  type ClientManager,
} from "./client-stack.ts";

interface Corkable {
  cork(): void;
  uncork(): void;
}

interface CorkableTransport {
  write(packets: unknown[]): void;
  readonly ws?: { readonly _socket?: Corkable | null } | null;
}

/** Why batched writes cannot work with the installed libraries, or undefined. */
export function batchedWritesUnavailable(): string | undefined {
  if (typeof (Manager.prototype as { _packet?: unknown })._packet !== "function") {
    return "socket.io-client Manager has no _packet method";
  }
  if (typeof (EngineSocket.prototype as unknown as { flush?: unknown }).flush !== "function") {
    return "engine.io-client Socket has no flush method";
  }
  if (typeof NodeWebSocket.prototype.write !== "function") {
    return "engine.io-client WebSocket transport has no write method";
  }
  return undefined;
}

const patched = new WeakSet<object>();
const noop = (): void => undefined;

/**
 * Batches the writes of `manager` and of every WebSocket transport its engines use (reconnects
 * too). `unavailable` is called when a live object lacks what the probe could not see.
 */
export function batchWrites(manager: ClientManager, unavailable: (reason: string) => void): void {
  flushPacketsWhole(manager);
  onEveryTransport(manager, (transport) => {
    if (!isWebSocketTransport(transport)) return;
    const reason = corkWrites(transport as CorkableTransport);
    if (reason) unavailable(reason);
  });
}

/** Makes `manager` hand all parts of a packet to its engine before one flush. */
function flushPacketsWhole(manager: ClientManager): void {
  const m = manager as ClientManager & { _packet: (packet: unknown) => void };
  if (patched.has(m)) return;
  patched.add(m);
  const packet = m._packet.bind(m);
  m._packet = (p: unknown): void => {
    const engine = m.engine as unknown as { flush: () => void } | undefined;
    if (!engine || typeof engine.flush !== "function" || Object.hasOwn(engine, "flush")) {
      return packet(p);
    }
    engine.flush = noop;
    try {
      packet(p);
    } finally {
      delete (engine as { flush?: unknown }).flush; // the prototype's flush again
    }
    engine.flush();
  };
}

/** Wraps `write` of a WebSocket transport so one flush is one write; a reason when it cannot. */
function corkWrites(t: CorkableTransport): string | undefined {
  if (patched.has(t)) return undefined;
  if (typeof t.write !== "function") return "the WebSocket transport has no write method";
  const tcp = t.ws?._socket;
  if (typeof tcp?.cork !== "function") return "the WebSocket transport's ws has no TCP socket";
  patched.add(t);
  const write = t.write.bind(t);
  t.write = (packets: unknown[]): void => {
    const socket = t.ws?._socket;
    if (!socket || packets.length < 2) return write(packets);
    socket.cork();
    try {
      write(packets);
    } finally {
      socket.uncork();
    }
  };
  return undefined;
}
