/**
 * Fewer writes per answer: the parts of one socket.io packet leave in one engine.io-client flush,
 * and one flush leaves in one `writev` on the WebSocket transport.
 *
 * Every binary-carriage answer (D19) is one socket.io packet encoded in two engine.io packets (the
 * ack's text part and its attachment). Stock socket.io-client writes them one by one and
 * engine.io-client flushes after each: the text part goes at once, the attachment waits for the
 * transport's drain (the next tick) and goes in a second flush, and ws writes each frame to the
 * TCP socket on its own. That is two system calls, an extra event-loop turn and two wake-ups of the
 * Server per chunk. Here (1) `Manager._packet` writes every part with the engine's flush held back
 * and flushes once, and (2) the WebSocket transport's `write(packets)` runs with the TCP socket
 * corked. Same bytes, same order, same frames (the Server does the same: server/write-batching.ts).
 *
 * Safe with the installed code (socket.io-client 4.8, engine.io-client 6.6, ws 8.23):
 * `Manager._packet` encodes and loops `engine.write(part)`, which pushes to `writeBuffer` and
 * calls `flush()`: the prototype method, shadowed by an own no-op for the loop and removed in
 * `finally`, then called once (it does nothing while the transport is busy or upgrading, leaving
 * the packets for the drain, as before). `write(packets)` calls `ws.send` for every packet
 * synchronously; ws's per-frame cork nests in ours and `uncork` writes before `write` returns.
 * Every part still goes through `writeBuffer` and `transport.send` before the engine's "drain",
 * and bytes the kernel has not taken stay in `ws.bufferedAmount`: what blob/buffers.ts
 * `DrainReleases` relies on to reuse a lent Buffer. Where an internal is missing or different,
 * that step is skipped (stock behaviour); test/computer/write-batching.test.ts fails then.
 */

interface Corkable {
  cork(): void;
  uncork(): void;
}

interface ClientTransport {
  readonly name: string;
  write(packets: unknown[]): void;
  readonly ws?: { readonly _socket?: Corkable } | null;
}

/**
 * The parts of an engine.io-client Socket (`manager.engine`) this module touches (`flush` is
 * protected in its typings, hence the cast where it is used).
 */
interface BatchableEngine {
  readonly transport?: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
}

/** The parts of a socket.io-client Manager (`socket.io`). */
export interface BatchableManager {
  readonly engine?: BatchableEngine;
  on(event: "open", listener: () => void): unknown;
}

const patched = new WeakSet<object>();
const noop = (): void => undefined;

/** Wraps `transport.write` of a WebSocket transport (once) so one flush is one write. */
export function corkWrites(transport: unknown): boolean {
  const t = transport as ClientTransport | null | undefined;
  if (!t || t.name !== "websocket" || typeof t.write !== "function" || patched.has(t)) return false;
  patched.add(t);
  const write = t.write.bind(t);
  t.write = (packets: unknown[]): void => {
    const tcp = t.ws?._socket;
    if (!tcp || packets.length < 2) return write(packets);
    tcp.cork();
    try {
      write(packets);
    } finally {
      tcp.uncork();
    }
  };
  return true;
}

/** Makes `manager` hand all parts of a packet to its engine before one flush (once). */
export function flushPacketsWhole(manager: BatchableManager): boolean {
  const m = manager as BatchableManager & { _packet?: (packet: unknown) => void };
  if (typeof m._packet !== "function" || patched.has(m)) return false;
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
  return true;
}

/**
 * Calls `fn` with every transport `manager`'s engines use: the one each (re)opened engine starts
 * with and the one it upgrades to.
 */
export function onEveryTransport(
  manager: BatchableManager,
  fn: (transport: unknown) => void,
): void {
  manager.on("open", () => {
    const engine = manager.engine;
    if (!engine) return;
    fn(engine.transport);
    engine.on("upgrade", fn);
  });
}

/** Both steps for a socket.io-client Manager, on every engine it opens (reconnects too). */
export function batchWrites(manager: BatchableManager): void {
  flushPacketsWhole(manager);
  onEveryTransport(manager, corkWrites);
}
