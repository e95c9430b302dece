/**
 * Lent chunk buffers (fast path `lend_buffers`): binary chunks are read into pooled buffers that
 * go back to the pool once the transport can no longer hold them, instead of a fresh allocation
 * per chunk (first-touch page faults on every chunk).
 *
 * The engine reads a binary chunk into a buffer taken here and answers with a subarray of it;
 * `claim` recognizes that answer (by its ArrayBuffer) when the transport sends it, and `hold`
 * keeps the buffer until the engine.io-client socket it was written into has drained. Why that
 * release point is safe, from the installed code (socket.io-client 4.8, engine.io-client 6.6,
 * engine.io-parser 5.2, ws 8):
 *
 * - The ack call encodes synchronously (socket.io-parser puts the Buffer in the attachment list)
 *   and `Manager._packet` writes each part into `engine.writeBuffer`. Packets leave `writeBuffer`
 *   only by being handed to `transport.send` (spliced on the transport's drain) or by the whole
 *   buffer being dropped on close. The engine emits "drain" only when `writeBuffer` is empty, so
 *   at an engine "drain" every part of every ack written before it has been handed to
 *   `transport.send` (batched-writes.ts changes when parts are flushed, not this).
 * - Polling: `transport.send` base64-encodes the Buffer into a string synchronously (EIO 4
 *   payloads are text); the HTTP request holds that string, not the Buffer.
 * - WebSocket: `transport.send` calls `ws.send` synchronously. The Buffer is either masked in
 *   place and handed to `net.Socket.write` itself (in-place-masking.ts, or any Buffer when the
 *   random mask is all zeros), or first waits in ws's queue while the sender is busy.
 *   `ws.bufferedAmount` counts the net.Socket's unwritten bytes (a chunk counts until libuv has
 *   handed all of it to the kernel) plus the bytes queued in ws's sender, so `bufferedAmount === 0`
 *   at the drain proves that neither the socket nor ws still holds the Buffer. When it is not 0,
 *   the buffers stay pending until a later drain finds it 0.
 * - Pending buffers are bounded (`maxPending` per engine, the oldest dropped) and dropped when
 *   the engine closes: dropping is always safe, the pool just allocates again.
 *
 * Without a pool (lending off, in-place masking on) every chunk gets a fresh buffer, which is
 * still the transport's own once answered: `claim` recognizes it, and nothing is held.
 */
import type { BufferPool, ChunkBuffers } from "../blob/buffers.ts";
import { engineWs, isWebSocketTransport, type ClientEngine } from "./client-stack.ts";

/** Why buffers cannot be lent with the installed libraries, or undefined. */
export function lentBuffersUnavailable(): string | undefined {
  const ws = engineWs();
  if (typeof ws === "string") return ws;
  const amount = Object.getOwnPropertyDescriptor(ws.WebSocket.prototype, "bufferedAmount");
  if (typeof amount?.get !== "function") return "ws WebSocket has no bufferedAmount getter";
  return undefined;
}

export interface LentBufferCounts {
  /** Buffers returned to the pool after a drain. */
  readonly returned: number;
  /** Buffers given up to the garbage collector (engine closed, too many pending). */
  readonly dropped: number;
}

interface DrainingTransport {
  readonly ws?: { readonly bufferedAmount?: unknown } | null;
}

export class TransportChunkBuffers implements ChunkBuffers, LentBufferCounts {
  readonly #pool: BufferPool | undefined;
  readonly #maxPending: number;
  readonly #unavailable: (reason: string) => void;
  /** Buffers handed to the engine, by ArrayBuffer (a chunk answer is a subarray of one). */
  readonly #taken = new WeakMap<object, Buffer>();
  readonly #pending = new WeakMap<ClientEngine, Buffer[]>();
  returned = 0;
  dropped = 0;

  /** Pooled when `pool` is given (lending), else a fresh buffer per chunk. */
  constructor(options: {
    pool?: BufferPool;
    maxPending: number;
    unavailable: (reason: string) => void;
  }) {
    this.#pool = options.pool;
    this.#maxPending = options.maxPending;
    this.#unavailable = options.unavailable;
  }

  take(n: number): Buffer {
    const buf = this.#pool ? this.#pool.take(n) : Buffer.allocUnsafeSlow(n);
    this.#taken.set(buf.buffer, buf);
    return buf;
  }

  putBack(buf: Buffer): void {
    this.#taken.delete(buf.buffer);
    this.#pool?.give(buf);
  }

  /** The buffer behind `blob` when it is an answer read into one of ours; it is then the caller's. */
  claim(blob: Buffer): Buffer | undefined {
    const buf = this.#taken.get(blob.buffer);
    if (buf) this.#taken.delete(blob.buffer);
    return buf;
  }

  /** `buf` was just written into `engine` (its ack call has returned): pooled again once drained. */
  hold(engine: ClientEngine | undefined, buf: Buffer): void {
    if (!this.#pool) return;
    if (!engine) return void this.dropped++;
    let list = this.#pending.get(engine);
    if (!list) {
      const fresh: Buffer[] = [];
      list = fresh;
      this.#pending.set(engine, fresh);
      engine.on("drain", () => this.#drained(engine, fresh));
      engine.on("close", () => {
        this.dropped += fresh.length;
        fresh.length = 0;
      });
    }
    list.push(buf);
    if (list.length > this.#maxPending) {
      list.shift();
      this.dropped++;
    }
  }

  #drained(engine: ClientEngine, list: Buffer[]): void {
    if (list.length === 0) return;
    const t = engine.transport;
    if (isWebSocketTransport(t)) {
      const amount = (t as DrainingTransport).ws?.bufferedAmount;
      if (typeof amount !== "number") {
        return this.#unavailable("the WebSocket transport's ws has no bufferedAmount");
      }
      if (amount !== 0) return;
    } else if ((t as { name?: unknown } | undefined)?.name !== "polling") return;
    for (const buf of list) this.#pool!.give(buf);
    this.returned += list.length;
    list.length = 0;
  }
}
