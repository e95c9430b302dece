/**
 * Reused read buffers for base64 chunks. A chunk is read into a pooled Buffer, encoded to a
 * string (which copies), and the Buffer goes straight back to the pool: no fresh allocation per
 * chunk, so no first-touch page faults (anchors B6: 14–20 µs per fault on this VM).
 *
 * Binary carriage (D19) lends a pooled Buffer to the transport: socket.io keeps a reference to it
 * until the transport has consumed it, which is after the ack call returns, so it goes back to the
 * pool only through `DrainReleases` below, at a point where no part of the transport can still
 * hold it. A buffer whose release cannot be proven is simply dropped (garbage collected).
 *
 * Size classes: the default chunk size (the common case), the largest base64 chunk the buffer
 * limit allows and the limit itself (raw binary over WebSocket), for requests with a big
 * `max_chunk_bytes`. Only the pages a chunk touches are faulted in, once per pooled buffer. Free
 * lists are bounded by the number of chunk reads in flight, which the engine's limiter bounds.
 */
export class BufferPool {
  readonly #classes: number[];
  readonly #free = new Map<number, Buffer[]>();
  readonly #maxFreePerClass: number;

  constructor(sizes: number[], maxFreePerClass: number) {
    this.#classes = [...new Set(sizes.filter((s) => s > 0))].sort((a, b) => a - b);
    this.#maxFreePerClass = maxFreePerClass;
    for (const c of this.#classes) this.#free.set(c, []);
  }

  /** A buffer of at least `n` bytes (contents undefined). */
  take(n: number): Buffer {
    const cls = this.#classes.find((c) => c >= n);
    if (cls === undefined) return Buffer.allocUnsafeSlow(n);
    return this.#free.get(cls)!.pop() ?? Buffer.allocUnsafeSlow(cls);
  }

  give(buf: Buffer): void {
    const list = this.#free.get(buf.length);
    if (list && list.length < this.#maxFreePerClass) list.push(buf);
  }
}

/** The parts of an engine.io-client Socket that `DrainReleases` reads (engine.io-client 6.6). */
export interface DrainingEngine {
  on(event: "drain" | "close", listener: () => void): unknown;
  readonly transport?: { readonly name: string; readonly ws?: { readonly bufferedAmount: number } };
}

/**
 * Returns Buffers lent to an engine.io-client socket (binary ack attachments) to their pool once
 * nothing in the transport stack can still reference them. Why the release point is safe, from
 * the installed code (socket.io-client 4.8, engine.io-client 6.6, engine.io-parser 5.2, ws 8.23):
 *
 * - The ack call encodes synchronously (socket.io-parser `deconstructPacket` puts the Buffer in
 *   the attachment list) and `Manager._packet` writes each part into `engine.writeBuffer`. Packets
 *   leave `writeBuffer` only by being handed to `transport.send` (spliced on the transport's
 *   drain) or by the whole buffer being dropped on close. The engine emits "drain" only when
 *   `writeBuffer` is empty, so at an engine "drain" every part of every ack written before it has
 *   been handed to `transport.send`. (computer/write-batching.ts holds the engine's flush back
 *   until every part is in `writeBuffer` and corks the TCP socket around `transport.write`; the
 *   parts still pass through `writeBuffer` and `transport.send`, and the cork is released before
 *   `write` returns, so neither step changes this argument.)
 * - Polling: `transport.send` runs `encodePayload` synchronously, which base64-encodes the Buffer
 *   into a string (EIO 4 payloads are text); the HTTP request holds that string, not the Buffer.
 * - WebSocket: `transport.send` calls `ws.send` synchronously. A lent Buffer is masked in place
 *   and handed to `net.Socket.write` itself (computer/mask-in-place.ts; stock ws would mask a
 *   copy), and so is any Buffer when the random mask is all zeros (`skipMasking`); when the sender
 *   is busy (compression negotiated, which our Server disables; or a Blob being read) the Buffer
 *   first waits in ws's queue. `ws.bufferedAmount` is the net.Socket's unwritten length (a chunk
 *   counts until libuv has handed all of it to the kernel) plus the bytes queued in ws's Sender,
 *   so `bufferedAmount === 0` at the drain proves that neither the socket nor ws still holds the
 *   Buffer. When it is not 0, the buffers stay pending until a later drain finds it 0.
 * - Pending buffers are bounded (`maxPending` per engine, the oldest dropped) and dropped when the
 *   engine closes: dropping is always safe, the pool just allocates again.
 */
export class DrainReleases {
  readonly #give: (buf: Buffer) => void;
  readonly #maxPending: number;
  readonly #pending = new WeakMap<DrainingEngine, Buffer[]>();
  /** Buffers returned / dropped (instrumentation for tests and benches). */
  released = 0;
  dropped = 0;

  constructor(give: (buf: Buffer) => void, maxPending: number) {
    this.#give = give;
    this.#maxPending = maxPending;
  }

  /** `buf` was just written into `engine` (its ack call has returned). */
  hold(engine: DrainingEngine | undefined, buf: Buffer): void {
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

  #drained(engine: DrainingEngine, list: Buffer[]): void {
    if (list.length === 0) return;
    const t = engine.transport;
    const free = t?.name === "polling" || (t?.name === "websocket" && t.ws?.bufferedAmount === 0);
    if (!free) return;
    for (const buf of list) this.#give(buf);
    this.released += list.length;
    list.length = 0;
  }
}
