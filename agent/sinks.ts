/**
 * Where pulled bytes go. The pull loop decodes every chunk straight into a region a sink hands
 * out, then commits regions strictly in offset order once their bytes are hashed:
 * - `BufferSink`: one preallocated Buffer; regions are views into it (nothing is copied).
 * - `FileSink`: a temp file next to the target, written in large batches (one positional `writev`
 *   per few MiB), fsync + rename at the end (the target never holds a partial file).
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

/**
 * A pool of reused scratch buffers, so first-touch page faults are paid once per buffer, not
 * once per chunk. Buffers have the size of the regions asked for: a read whose chunk size changes
 * (a binary request answered in base64 goes on at the base64 size) starts a new set.
 */
class ScratchPool {
  private readonly free: ArrayBufferLike[] = [];
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private readonly isFree = new WeakSet<ArrayBufferLike>();
  constructor(private size: number) {}
  take(len: number): Buffer {
    if (len > this.size || len * 4 < this.size) {
      this.size = len;
      this.free.length = 0;
    }
    let store = this.free.pop();
    if (store) this.isFree.delete(store);
    else {
      store = Buffer.allocUnsafeSlow(Math.max(1, this.size)).buffer;
      this.owned.add(store);
    }
    return Buffer.from(store, 0, len);
  }
  give(view: Buffer): void {
    const store = view.buffer;
    if (!this.owned.has(store) || this.isFree.has(store)) return;
    if (store.byteLength !== Math.max(1, this.size)) return; // of an earlier size: let it go
    this.isFree.add(store);
    this.free.push(store);
  }
}

export interface FileSinkResult {
  path: string;
  size: number;
}

/** Committed bytes gathered before one positional write (a `writev` of the chunks). */
export const FILE_WRITE_BATCH_BYTES = 4 * 1024 * 1024;
/** At most this many chunks per write (Linux's IOV_MAX). */
const MAX_PARTS = 1024;
/**
 * Written bytes after which the disk is asked to start writing them (a background `fdatasync`,
 * never awaited by the pull): the fsync at the end then has little left to flush, instead of
 * the whole file (for 256 MiB on the reference machine, 0.15 s of a 1.5 s download).
 */
export const FILE_WRITEBACK_BYTES = 32 * 1024 * 1024;

/** Contiguous committed chunks written together, and who waits for them to be written. */
class WriteBatch {
  readonly parts: Buffer[] = [];
  /** Which parts are pool regions, to give back once written. */
  readonly owned: boolean[] = [];
  bytes = 0;
  /** No more chunks join it: it is full, or the next chunk did not continue it. */
  sealed = false;
  private waiters: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(readonly at: number) {}

  get end(): number {
    return this.at + this.bytes;
  }
  get waited(): boolean {
    return this.waiters !== undefined;
  }

  add(bytes: Buffer, owned: boolean): void {
    this.parts.push(bytes);
    this.owned.push(owned);
    this.bytes += bytes.length;
    if (this.bytes >= FILE_WRITE_BATCH_BYTES || this.parts.length >= MAX_PARTS) this.sealed = true;
  }

  /** Settles once the batch is written (or dropped). */
  written(): Promise<void> {
    this.waiters ??= new Promise<void>((resolve) => (this.release = resolve));
    return this.waiters;
  }

  done(): void {
    this.release?.();
  }
}

/**
 * Writes to `<dir>/.<name>.part-<random>`, then fsyncs and renames onto `path`; on failure the
 * temp file is removed and `path` is left untouched. Committed chunks arrive in offset order and
 * are gathered into batches of `FILE_WRITE_BATCH_BYTES`, each written by one positional `writev`
 * (one write in flight at a time), so a download costs a few dozen write calls, not one per
 * chunk. The sink holds at most the batch being written and the one being gathered; past that,
 * a commit answers with a promise and the pull waits. The file is durable by the one fsync at the
 * end, before the rename; every `FILE_WRITEBACK_BYTES` written before that, a background
 * `fdatasync` only makes the disk start early.
 */
export class FileSink implements Sink<FileSinkResult> {
  readonly inPlace = false;
  private readonly tmpPath: string;
  private fh: FileHandle | undefined;
  private size = 0;
  private readonly pool: ScratchPool;
  /** Batches not written yet, in file order; the first may be the one being written. */
  private batches: WriteBatch[] = [];
  private writing: Promise<void> | undefined;
  private writeError: unknown;
  /** The background `fdatasync` in flight, if any, and the bytes written since the last one. */
  private writeback: Promise<void> | undefined;
  private unsynced = 0;
  /** `writev` calls issued so far (one per batch, more only after a short write). */
  writeCalls = 0;
  /** Background `fdatasync` calls started so far. */
  writebackCalls = 0;

  constructor(
    readonly path: string,
    scratchBytes: number = 64 * 1024,
  ) {
    this.tmpPath = join(dirname(path), `.${basename(path)}.part-${randomBytes(4).toString("hex")}`);
    this.pool = new ScratchPool(scratchBytes);
  }

  async begin(totalSize: number): Promise<void> {
    // A restart drops what the previous read left unwritten, and waits for its write in flight
    // (it would land after the truncate).
    this.dropBatches();
    await this.writing;
    this.throwWriteError();
    this.fh ??= await open(this.tmpPath, "w", 0o644);
    await this.fh.truncate(totalSize);
    this.size = totalSize;
  }
  region(_offset: number, len: number): Buffer {
    return this.pool.take(len);
  }
  commit(offset: number, bytes: Buffer, owned: boolean): Promise<void> | void {
    if (!this.fh) throw new Error("FileSink.commit before begin");
    if (this.writeError !== undefined) {
      if (owned) this.pool.give(bytes);
      return Promise.reject(asError(this.writeError));
    }
    let batch = this.batches[this.batches.length - 1];
    if (!batch || batch.sealed || batch.end !== offset) {
      if (batch) batch.sealed = true;
      batch = new WriteBatch(offset);
      this.batches.push(batch);
    }
    batch.add(bytes, owned);
    // Held beyond the write in flight and one batch being gathered: the pull must wait.
    const held = this.writing ? this.batches.length - 1 : this.batches.length;
    const wait = held > 1 || (held === 1 && batch.sealed && this.writing !== undefined);
    const done = wait ? batch.written() : undefined;
    this.pump();
    return done;
  }
  discard(bytes: Buffer): void {
    this.pool.give(bytes);
  }
  canRestart(): boolean {
    return true;
  }
  async finish(): Promise<FileSinkResult> {
    const last = this.batches[this.batches.length - 1];
    if (last) last.sealed = true;
    this.pump();
    while (this.writing) await this.writing;
    await this.writeback;
    this.throwWriteError();
    const fh = this.fh;
    if (!fh) throw new Error("FileSink.finish before begin");
    await fh.sync();
    await fh.close();
    this.fh = undefined;
    await rename(this.tmpPath, this.path);
    return { path: this.path, size: this.size };
  }
  async abort(): Promise<void> {
    this.dropBatches();
    try {
      await this.writing;
      await this.writeback;
      await this.fh?.close();
    } catch {
      // best effort
    }
    this.fh = undefined;
    await unlink(this.tmpPath).catch(() => undefined);
  }

  /** Starts writing the next batch when nothing is being written and it should go now. */
  private pump(): void {
    if (this.writing) return;
    const next = this.batches[0];
    if (!next || !(next.sealed || next.waited)) return;
    next.sealed = true;
    this.writing = this.write(next).finally(() => {
      this.writing = undefined;
      this.pump();
    });
  }

  private async write(batch: WriteBatch): Promise<void> {
    const fh = this.fh!;
    try {
      let parts = batch.parts;
      let at = batch.at;
      while (parts.length > 0) {
        this.writeCalls++;
        const { bytesWritten } = await fh.writev(parts, at);
        if (bytesWritten <= 0) throw new Error("write made no progress");
        at += bytesWritten;
        parts = remainingParts(parts, bytesWritten);
      }
      this.startWriteback(fh, batch.bytes);
    } catch (err) {
      this.writeError ??= err;
    } finally {
      if (this.batches[0] === batch) this.batches.shift();
      this.giveBack(batch);
    }
  }

  /** A background `fdatasync` once enough was written since the last (one in flight at most). */
  private startWriteback(fh: FileHandle, written: number): void {
    this.unsynced += written;
    if (this.writeback || this.unsynced < FILE_WRITEBACK_BYTES) return;
    this.unsynced = 0;
    this.writebackCalls++;
    // A failure is the download's: the kernel reports a writeback error once per descriptor, so
    // the fsync at the end would not see it again.
    this.writeback = fh
      .datasync()
      .catch((err: unknown) => void (this.writeError ??= err))
      .finally(() => (this.writeback = undefined));
  }

  /** Forgets every batch not being written (their chunks are given back, their waiters freed). */
  private dropBatches(): void {
    const keep = this.writing ? this.batches.slice(0, 1) : [];
    for (const b of this.batches.slice(keep.length)) this.giveBack(b);
    this.batches = keep;
  }

  private giveBack(batch: WriteBatch): void {
    batch.parts.forEach((b, i) => {
      if (batch.owned[i]) this.pool.give(b);
    });
    batch.parts.length = 0;
    batch.done();
  }

  private throwWriteError(): void {
    if (this.writeError !== undefined) throw asError(this.writeError);
  }
}

/** `parts` without their first `n` bytes (after a short write). */
function remainingParts(parts: Buffer[], n: number): Buffer[] {
  let skip = n;
  let i = 0;
  while (i < parts.length && skip >= parts[i]!.length) skip -= parts[i++]!.length;
  const rest = parts.slice(i);
  if (skip > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(skip);
  return rest;
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
