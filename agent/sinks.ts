/**
 * Where pulled bytes go. The pull hands a sink each chunk's bytes strictly in offset order, once
 * they are hashed (docs/protocol.md §6.9). A sink copies what it keeps before `commit` returns:
 * the pull then gives the chunk's bytes back to the client, which decodes the next ones into
 * them (agent/client.ts, `DecodeBuffers`).
 * - `BufferSink`: one Buffer allocated once the size is known and fits (D45); chunks copied in.
 * - `FileSink`: a temp file next to the target, written in large batches (one positional write
 *   per few MiB), fsync + rename at the end: the target never holds a partial file, and a failed
 *   download (a full disk too) leaves what was there.
 * - `StreamSink`: an in-order async iterable of chunks (the consumer's own copies) with
 *   backpressure.
 * Memory stays bounded by the pull's window, whatever the blob's size.
 */
import { constants as bufferConstants } from "node:buffer";
import { randomBytes } from "node:crypto";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BlobChangedError, BlobTooLargeError, FileWriteError, asError } from "./errors.ts";

export interface Sink<R> {
  /**
   * Prepares a (re)read of `totalSize` bytes: called at the start and at every restart. A size
   * the sink cannot hold is a `BlobTooLargeError`, thrown before anything is allocated.
   */
  begin(totalSize: number): Promise<void>;
  /**
   * Takes the bytes at `offset`, in offset order, copying what it keeps before it returns (the
   * caller reuses `bytes`). A promise says the sink holds enough for now: the pull waits for it
   * before committing more (a file sink's writes catching up).
   */
  commit(offset: number, bytes: Buffer): Promise<void> | void;
  /** false once bytes left the process irrevocably (a consumer read them): no restart then. */
  canRestart(): boolean;
  /** Every byte was verified: make the result visible. */
  finish(): Promise<R>;
  /** The pull failed: clean up. Never throws. */
  abort(reason: unknown): Promise<void>;
}

/** Collects the blob in one Buffer allocated once the size is known (and fits one Buffer). */
export class BufferSink implements Sink<Buffer> {
  private dest: Buffer = Buffer.alloc(0);

  async begin(totalSize: number): Promise<void> {
    if (totalSize > bufferConstants.MAX_LENGTH) {
      throw new BlobTooLargeError(totalSize, bufferConstants.MAX_LENGTH, "buffer");
    }
    if (this.dest.length !== totalSize) this.dest = Buffer.allocUnsafe(totalSize);
  }
  commit(offset: number, bytes: Buffer): void {
    bytes.copy(this.dest, offset);
  }
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
  private readonly queue: Buffer[] = [];
  private waiting: (() => void) | undefined;
  private readonly room: (() => void)[] = [];
  private ended = false;
  private failure: unknown;
  private emitted = false;

  /** `highWater`: chunks waiting for the consumer before a commit makes the pull wait. */
  constructor(private readonly highWater: number) {}

  async begin(): Promise<void> {
    if (this.emitted) throw new BlobChangedError("blob changed after bytes were streamed");
  }
  commit(_offset: number, bytes: Buffer): Promise<void> | void {
    // The consumer keeps what it reads: its own copy.
    this.queue.push(Buffer.from(bytes));
    this.wake();
    if (this.queue.length < this.highWater) return;
    return new Promise<void>((resolve) => this.room.push(resolve));
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

// ---------------------------------------------------------------------------------------------
// FileSink: a download written to a temp file next to its target in large batches, made durable
// by one fsync at the end and renamed onto the target, which never holds a partial file.

export interface FileSinkResult {
  path: string;
  size: number;
  /** Write calls the download took (one per `FILE_WRITE_BATCH_BYTES`, more after short writes). */
  writes: number;
  /** Background `fdatasync` calls started (one per `FILE_WRITEBACK_BYTES` written). */
  writebacks: number;
}

/** Committed bytes gathered (copied) before one positional write. */
export const FILE_WRITE_BATCH_BYTES = 4 * 1024 * 1024;
/**
 * Written bytes after which the disk is asked to start writing them (a background `fdatasync`,
 * never awaited by the pull): the fsync at the end then has little left to flush, instead of
 * the whole file (for 256 MiB on the reference machine, 0.15 s of a 1.5 s download).
 */
export const FILE_WRITEBACK_BYTES = 32 * 1024 * 1024;

/** Contiguous committed chunks, copied into one buffer and written together. */
class WriteBatch {
  bytes = 0;
  /** No more chunks join it: it is full, or the next chunk did not continue it. */
  sealed = false;
  private waiters: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(
    readonly at: number,
    readonly buf: Buffer,
  ) {}

  get end(): number {
    return this.at + this.bytes;
  }
  get room(): number {
    return this.buf.length - this.bytes;
  }
  get waited(): boolean {
    return this.waiters !== undefined;
  }

  add(bytes: Buffer): void {
    bytes.copy(this.buf, this.bytes);
    this.bytes += bytes.length;
    if (this.room === 0) this.sealed = true;
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
 * are copied into batches of `FILE_WRITE_BATCH_BYTES` (two buffers, reused), each written by one
 * positional write (one write in flight at a time), so a download costs a few dozen write calls,
 * not one per chunk. The sink holds at most the batch being written and the one being gathered;
 * past that, a commit answers with a promise and the pull waits. The file is durable by the one fsync at the
 * end, before the rename; every `FILE_WRITEBACK_BYTES` written before that, a background
 * `fdatasync` only makes the disk start early.
 */
export class FileSink implements Sink<FileSinkResult> {
  private readonly tmpPath: string;
  private fh: FileHandle | undefined;
  private size = 0;
  /** Batches not written yet, in file order; the first may be the one being written. */
  private batches: WriteBatch[] = [];
  private writing: Promise<void> | undefined;
  private writeError: unknown;
  /** The background `fdatasync` in flight, if any, and the bytes written since the last one. */
  private writeback: Promise<void> | undefined;
  private unsynced = 0;
  private writes = 0;
  private writebacks = 0;
  /** Batch buffers written and free again. */
  private readonly spare: Buffer[] = [];

  constructor(readonly path: string) {
    this.tmpPath = join(dirname(path), `.${basename(path)}.part-${randomBytes(4).toString("hex")}`);
  }

  async begin(totalSize: number): Promise<void> {
    if (!Number.isSafeInteger(totalSize)) {
      throw new BlobTooLargeError(totalSize, Number.MAX_SAFE_INTEGER, "file");
    }
    // A restart drops what the previous read left unwritten, and waits for its write in flight
    // (it would land after the truncate).
    this.dropBatches();
    await this.writing;
    this.throwWriteError();
    try {
      this.fh ??= await open(this.tmpPath, "w", 0o644);
      await this.fh.truncate(totalSize);
    } catch (err) {
      throw this.named(err, totalSize);
    }
    this.size = totalSize;
  }
  commit(offset: number, bytes: Buffer): Promise<void> | void {
    if (!this.fh) throw new Error("FileSink.commit before begin");
    if (this.writeError !== undefined) return Promise.reject(this.named(this.writeError));
    let batch = this.batches[this.batches.length - 1];
    if (!batch || batch.sealed || batch.end !== offset || batch.room < bytes.length) {
      if (batch) batch.sealed = true;
      batch = new WriteBatch(offset, this.batchBuffer(bytes.length));
      this.batches.push(batch);
    }
    batch.add(bytes);
    // Held beyond the write in flight and one batch being gathered: the pull must wait.
    const held = this.writing ? this.batches.length - 1 : this.batches.length;
    const wait = held > 1 || (held === 1 && batch.sealed && this.writing !== undefined);
    const done = wait ? batch.written() : undefined;
    this.pump();
    return done;
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
    try {
      await fh.sync();
      await fh.close();
      this.fh = undefined;
      await rename(this.tmpPath, this.path);
    } catch (err) {
      throw this.named(err);
    }
    return { path: this.path, size: this.size, writes: this.writes, writebacks: this.writebacks };
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
      for (let done = 0; done < batch.bytes;) {
        this.writes++;
        const n = batch.bytes - done;
        const { bytesWritten } = await fh.write(batch.buf, done, n, batch.at + done);
        if (bytesWritten <= 0) throw new Error("write made no progress");
        done += bytesWritten;
      }
      this.startWriteback(fh, batch.bytes);
    } catch (err) {
      this.writeError ??= err;
    } finally {
      if (this.batches[0] === batch) this.batches.shift();
      this.release(batch);
    }
  }

  /** A buffer for a batch: a spare one, or a new one (larger when one chunk needs it). */
  private batchBuffer(least: number): Buffer {
    if (least <= FILE_WRITE_BATCH_BYTES) {
      return this.spare.pop() ?? Buffer.allocUnsafeSlow(FILE_WRITE_BATCH_BYTES);
    }
    return Buffer.allocUnsafeSlow(least);
  }

  /** A background `fdatasync` once enough was written since the last (one in flight at most). */
  private startWriteback(fh: FileHandle, written: number): void {
    this.unsynced += written;
    if (this.writeback || this.unsynced < FILE_WRITEBACK_BYTES) return;
    this.unsynced = 0;
    this.writebacks++;
    // A failure is the download's: the kernel reports a writeback error once per descriptor, so
    // the fsync at the end would not see it again.
    this.writeback = fh
      .datasync()
      .catch((err: unknown) => void (this.writeError ??= err))
      .finally(() => (this.writeback = undefined));
  }

  /** Forgets every batch not being written (their chunks dropped, their waiters freed). */
  private dropBatches(): void {
    const keep = this.writing ? this.batches.slice(0, 1) : [];
    for (const b of this.batches.slice(keep.length)) this.release(b);
    this.batches = keep;
  }

  /** Keeps a batch's buffer for the next one and frees whoever waits for it. */
  private release(batch: WriteBatch): void {
    if (batch.buf.length === FILE_WRITE_BATCH_BYTES && this.spare.length < 2) {
      this.spare.push(batch.buf);
    }
    batch.done();
  }

  private throwWriteError(): void {
    if (this.writeError !== undefined) throw this.named(this.writeError);
  }

  /**
   * A file-system failure as what it means for the download: a file too large for this file
   * system (EFBIG) is a `BlobTooLargeError`, anything else a `FileWriteError` naming the target.
   */
  private named(err: unknown, totalSize = this.size): Error {
    if (err instanceof BlobTooLargeError || err instanceof FileWriteError) return err;
    if ((err as NodeJS.ErrnoException)?.code === "EFBIG") {
      return new BlobTooLargeError(totalSize, undefined, "file");
    }
    return new FileWriteError(this.path, err);
  }
}
