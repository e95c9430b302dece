/**
 * Where pulled bytes go. The pull loop decodes every chunk straight into a region a sink hands
 * out, then commits regions strictly in offset order once their bytes are hashed:
 * - `BufferSink`: one preallocated Buffer; regions are views into it (nothing is copied).
 * - `FileSink`: a temp file next to the target, positional writes from a small pool of reused
 *   scratch buffers, fsync + rename at the end (the target never holds a partial file).
 * - `StreamSink`: an in-order async iterable of chunks with backpressure.
 * Memory stays bounded by the pull window, whatever the blob's size.
 */
import { randomBytes } from "node:crypto";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BlobChangedError, asError } from "./errors.ts";

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

/** A pool of reused scratch buffers (first-touch page faults are paid once per buffer). */
class ScratchPool {
  private readonly free: ArrayBufferLike[] = [];
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private readonly isFree = new WeakSet<ArrayBufferLike>();
  constructor(private readonly size: number) {}
  take(len: number): Buffer {
    // A chunk larger than the planned size cannot come from a well-formed plan: one-off buffer.
    if (len > this.size) return Buffer.allocUnsafeSlow(len);
    let store = this.free.pop();
    if (store) this.isFree.delete(store);
    else {
      store = Buffer.allocUnsafeSlow(this.size).buffer;
      this.owned.add(store);
    }
    return Buffer.from(store, 0, len);
  }
  give(view: Buffer): void {
    const store = view.buffer;
    if (!this.owned.has(store) || this.isFree.has(store)) return;
    this.isFree.add(store);
    this.free.push(store);
  }
}

export interface FileSinkResult {
  path: string;
  size: number;
}

/**
 * Writes to `<dir>/.<name>.part-<random>` with positional writes, then fsyncs and renames onto
 * `path`. On failure the temp file is removed and `path` is left untouched.
 */
export class FileSink implements Sink<FileSinkResult> {
  readonly inPlace = false;
  private readonly tmpPath: string;
  private fh: FileHandle | undefined;
  private size = 0;
  private writes = new Set<Promise<void>>();
  private writeError: unknown;
  private readonly pool: ScratchPool;

  constructor(
    readonly path: string,
    scratchBytes: number,
  ) {
    this.tmpPath = join(dirname(path), `.${basename(path)}.part-${randomBytes(4).toString("hex")}`);
    this.pool = new ScratchPool(scratchBytes);
  }

  async begin(totalSize: number): Promise<void> {
    // A restart must not race writes of the previous read (they would land after the truncate).
    await this.drain();
    this.fh ??= await open(this.tmpPath, "w", 0o644);
    await this.fh.truncate(totalSize);
    this.size = totalSize;
  }
  region(_offset: number, len: number): Buffer {
    return this.pool.take(len);
  }
  commit(offset: number, bytes: Buffer, owned: boolean): Promise<void> {
    const fh = this.fh;
    if (!fh) throw new Error("FileSink.commit before begin");
    const p = (async () => {
      try {
        let done = 0;
        while (done < bytes.length) {
          const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, offset + done);
          done += bytesWritten;
        }
      } catch (err) {
        this.writeError ??= err;
      } finally {
        if (owned) this.pool.give(bytes);
      }
    })();
    this.writes.add(p);
    void p.finally(() => this.writes.delete(p));
    return p;
  }
  discard(bytes: Buffer): void {
    this.pool.give(bytes);
  }
  canRestart(): boolean {
    return true;
  }
  private async drain(): Promise<void> {
    while (this.writes.size > 0) await Promise.all([...this.writes]);
    if (this.writeError !== undefined) throw asError(this.writeError);
  }
  async finish(): Promise<FileSinkResult> {
    await this.drain();
    const fh = this.fh;
    if (!fh) throw new Error("FileSink.finish before begin");
    await fh.sync();
    await fh.close();
    this.fh = undefined;
    await rename(this.tmpPath, this.path);
    return { path: this.path, size: this.size };
  }
  async abort(): Promise<void> {
    try {
      await Promise.allSettled([...this.writes]);
      await this.fh?.close();
    } catch {
      // best effort
    }
    this.fh = undefined;
    await unlink(this.tmpPath).catch(() => undefined);
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
