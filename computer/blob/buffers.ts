/**
 * Reused read buffers for base64 chunks. A chunk is read into a pooled Buffer, encoded to a
 * string (which copies), and the Buffer goes straight back to the pool: no fresh allocation per
 * chunk, so no first-touch page faults (anchors B6: 14–20 µs per fault on this VM).
 *
 * Binary carriage (D19) does NOT use the pool: socket.io keeps a reference to the Buffer until the
 * transport has written it, which is after the ack call returns, so the engine reads those chunks
 * straight into a fresh Buffer of the exact size (one allocation, no copy).
 *
 * Two size classes: the default chunk size (the common case) and the largest chunk the buffer
 * limit allows (requests with a big `max_chunk_bytes`). Free lists are bounded by the number of
 * chunk reads in flight, which the engine's limiter bounds.
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
