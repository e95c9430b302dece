/**
 * Where pulled bytes go. The pull loop decodes every chunk straight into a region a sink hands
 * out, then commits regions strictly in offset order once their bytes are hashed:
 * - `BufferSink`: one preallocated Buffer; regions are views into it (nothing is copied).
 * - `FileSink`: a temp file next to the target, written in large batches (one positional `writev`
 *   per few MiB), fsync + rename at the end (the target never holds a partial file).
 * - `StreamSink`: an in-order async iterable of chunks with backpressure.
 * Memory stays bounded by the pull window, whatever the blob's size.
 */
import { BlobChangedError, asError } from "./errors.ts";
import { ScratchPool } from "./scratch-pool.ts";

export {
  FILE_WRITEBACK_BYTES,
  FILE_WRITE_BATCH_BYTES,
  FileSink,
  type FileSinkResult,
} from "./file-sink.ts";

export interface Sink<R> {
  /** true when regions are views into the destination itself (no scratch memory is held). */
  readonly inPlace: boolean;
  /** Prepares a (re)read of `totalSize` bytes. Called at the start and at every restart. */
  begin(totalSize: number): Promise<void>;
  /** A writable region of `len` bytes for the chunk at `offset` (the decode target). */
  region(offset: number, len: number): Buffer;
  /**
   * Hands over the bytes of `offset`, in offset order. `owned` says whether `bytes` is a region
   * from `region()` (returned to the pool once written) or a buffer the sink may keep.
   * Resolves when the bytes no longer need to be held in memory.
   */
  commit(offset: number, bytes: Buffer, owned: boolean): Promise<void> | void;
  /** A region that will not be committed (chunk rejected, read restarted): back to the pool. */
  discard(bytes: Buffer): void;
  /** false once bytes left the process irrevocably (a consumer read them): no restart then. */
  canRestart(): boolean;
  /** Every byte was verified: make the result visible. */
  finish(): Promise<R>;
  /** The pull failed: clean up. Never throws. */
  abort(reason: unknown): Promise<void>;
}

/** Collects the blob in one Buffer allocated once the size is known. */
export class BufferSink implements Sink<Buffer> {
  readonly inPlace = true;
  private dest: Buffer = Buffer.alloc(0);

  async begin(totalSize: number): Promise<void> {
    if (this.dest.length !== totalSize) this.dest = Buffer.allocUnsafe(totalSize);
  }
  region(offset: number, len: number): Buffer {
    return this.dest.subarray(offset, offset + len);
  }
  commit(offset: number, bytes: Buffer, owned: boolean): void {
    // Regions are already in place; a foreign buffer (binary carriage) is copied in.
    if (!owned) bytes.copy(this.dest, offset);
  }
  discard(): void {}
  canRestart(): boolean {
    return true;
  }
  async finish(): Promise<Buffer> {
    return this.dest;
  }
  async abort(): Promise<void> {
    this.dest = Buffer.alloc(0);
  }
}

/**
 * An in-order async iterable of chunks. Bytes a consumer has read cannot be taken back, so a
 * source change after the first chunk left is a `BlobChangedError`, not a silent restart.
 */
export class StreamSink implements Sink<void> {
  readonly inPlace = false;
  private readonly queue: Buffer[] = [];
  private waiting: (() => void) | undefined;
  private readonly room: (() => void)[] = [];
  private ended = false;
  private failure: unknown;
  private emitted = false;
  private readonly pool: ScratchPool;

  constructor(
    scratchBytes: number,
    private readonly highWater: number,
  ) {
    this.pool = new ScratchPool(scratchBytes);
  }

  async begin(): Promise<void> {
    if (this.emitted) throw new BlobChangedError("blob changed after bytes were streamed");
  }
  region(_offset: number, len: number): Buffer {
    return this.pool.take(len);
  }
  commit(_offset: number, bytes: Buffer, owned: boolean): Promise<void> | void {
    let out = bytes;
    if (owned) {
      // The consumer keeps what it reads: hand it its own copy, recycle the scratch region.
      out = Buffer.allocUnsafe(bytes.length);
      bytes.copy(out);
      this.pool.give(bytes);
    }
    this.queue.push(out);
    this.wake();
    if (this.queue.length < this.highWater) return;
    return new Promise<void>((resolve) => this.room.push(resolve));
  }
  discard(bytes: Buffer): void {
    this.pool.give(bytes);
  }
  canRestart(): boolean {
    return !this.emitted && this.queue.length === 0;
  }
  async finish(): Promise<void> {
    this.ended = true;
    this.wake();
  }
  async abort(reason: unknown): Promise<void> {
    this.failure = reason ?? new Error("aborted");
    this.ended = true;
    this.wake();
    for (const r of this.room.splice(0)) r();
  }
  private wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }

  /** The consumer side. */
  async *chunks(): AsyncGenerator<Buffer, void, undefined> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        this.emitted = true;
        if (this.queue.length < this.highWater) for (const r of this.room.splice(0)) r();
        yield next;
        continue;
      }
      if (this.failure !== undefined) throw asError(this.failure);
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}
