/**
 * Chunk buffers of the blob engine.
 *
 * `BufferPool`: reused read buffers. A base64 chunk is read into a pooled Buffer, encoded to a
 * string (which copies), and the Buffer goes straight back to the pool: no fresh allocation per
 * chunk, so no first-touch page faults (14–20 µs per 4 KiB page on a loaded VM). Size classes
 * (`chunkSizeClasses`): the default chunk size (the common case), the largest base64 chunk the
 * buffer limit allows and the limit itself (raw binary over WebSocket), for requests with a big
 * `max_chunk_bytes`. Only the pages a chunk touches are faulted in, once per pooled buffer. Free
 * lists are bounded by the number of chunk reads in flight, which the engine's limiter bounds.
 *
 * `ChunkBuffers`: where a binary chunk (D19) is read into. The engine answers with a subarray of
 * that buffer, so whoever hands it out decides what happens to it after the answer; the engine
 * only gives back the ones it did not answer with. Plain fresh allocations by default; the
 * Computer's transport may supply buffers it can reuse once they have been written.
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

/**
 * The size classes of chunk buffers for a default chunk and a Server buffer limit: the default
 * chunk, the largest base64 chunk any envelope allows, and the limit (raw binary over WebSocket).
 */
export function chunkSizeClasses(defaultChunkBytes: number, maxHttpBufferSize: number): number[] {
  return [defaultChunkBytes, Math.floor(maxHttpBufferSize / 4) * 3, maxHttpBufferSize];
}

/** Buffers binary chunks are read into and answered with. */
export interface ChunkBuffers {
  /** A buffer of at least `n` bytes (contents undefined) that is the engine's until it answers. */
  take(n: number): Buffer;
  /** A buffer from `take` the engine did not answer with (the read was retried or failed). */
  putBack(buf: Buffer): void;
}

/** A fresh allocation per chunk, left to the garbage collector after its answer. */
export const freshChunkBuffers: ChunkBuffers = {
  take: (n) => Buffer.allocUnsafeSlow(n),
  putBack: () => undefined,
};
