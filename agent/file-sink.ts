/**
 * `FileSink`: a download written to a partial file next to its target (`<target>.a2c-part`,
 * partial-file.ts) in large batches, made durable by one fsync at the end and renamed onto the
 * target, which never holds a partial file. An interrupted download keeps the partial file,
 * which a later one resumes (D85, D86). The sink contract: sinks.ts.
 */
import type { Hash } from "node:crypto";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import {
  BlobNotAccessibleError,
  BlobTooLargeError,
  ChunkContractError,
  FileWriteError,
  IntegrityError,
} from "./errors.ts";
import {
  TRAILER_BYTES,
  freshRecord,
  partialPath,
  readRecord,
  verifyPrefix,
  writeRecord,
  type Mark,
  type PartialRecord,
} from "./partial-file.ts";
import type { ReadStart, Sink } from "./sinks.ts";

export interface FileSinkResult {
  path: string;
  size: number;
  /** Write calls the download took (one per `FILE_WRITE_BATCH_BYTES`, more after short writes). */
  writes: number;
  /** Background `fdatasync` calls started (one per `FILE_WRITEBACK_BYTES` written). */
  writebacks: number;
}

/** What became of a partial file found at the start of a download with `resume`. */
export type ResumeEvent =
  | { kind: "resumed"; partial: string; offset: number; totalSize: number }
  /** It held other content (the source changed since): the download starts from 0. */
  | { kind: "changed"; partial: string; was: { sha256: string; totalSize: number } }
  /** It cannot be trusted (no valid record, or its bytes do not hash as recorded): from 0. */
  | { kind: "unusable"; partial: string; why: string };

export interface FileSinkOptions {
  /** Go on from the partial file an earlier download of the same content left. */
  resume?: boolean;
  /** How to ask for the resource again, kept in the partial file's record. */
  source?: { computer: string; handle: string };
  onResume?: (event: ResumeEvent) => void;
}

/** Committed bytes gathered (copied) before one positional write. */
export const FILE_WRITE_BATCH_BYTES = 4 * 1024 * 1024;
/**
 * Written bytes after which the disk is asked to start writing them (a background `fdatasync`,
 * never awaited by the pull): the fsync at the end then has little left to flush, instead of
 * the whole file (for 256 MiB on the reference machine, 0.15 s of a 1.5 s download).
 */
export const FILE_WRITEBACK_BYTES = 32 * 1024 * 1024;
/**
 * The longest committed bytes wait to be written, and a resume mark to be recorded: a process
 * killed at any moment loses at most about this much of the pull to a later resume.
 */
export const FILE_CHECKPOINT_MS = 100;

/** Partial files downloads of this process write: a second download to the same file is refused. */
const partialsInUse = new Set<string>();

/** Contiguous committed chunks, copied into one buffer and written together. */
class WriteBatch {
  bytes = 0;
  /** No more chunks join it: it is full, or the next chunk did not continue it. */
  sealed = false;
  readonly startedAt = performance.now();
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

/** Whether what a failed download wrote is worth a resume (not after bad content or a bad disk). */
function worthKeeping(reason: unknown): boolean {
  return !(
    reason instanceof IntegrityError ||
    reason instanceof FileWriteError ||
    reason instanceof BlobTooLargeError ||
    reason instanceof ChunkContractError ||
    reason instanceof BlobNotAccessibleError
  );
}

/**
 * Writes to `<path>.a2c-part`, then cuts its trailer, fsyncs and renames it onto `path`; `path`
 * itself is never touched before. Committed chunks arrive in offset order and are copied into
 * batches of `FILE_WRITE_BATCH_BYTES` (two buffers, reused), each written by one positional write
 * (one write in flight at a time), so a download costs a few dozen write calls, not one per
 * chunk. The sink holds at most the batch being written and the one being gathered; past that, a
 * commit answers with a promise and the pull waits. The file is durable by the one fsync at the
 * end, before the rename; every `FILE_WRITEBACK_BYTES` written before that, a background
 * `fdatasync` only makes the disk start early.
 *
 * Resume marks (partial-file.ts): when a batch starts at a commit, the read's hash covers exactly
 * the bytes before it, so its digest is a mark; once the bytes up to a mark are written, the
 * record in the trailer names it (a 4 KiB write, no fsync: a killed process loses nothing the
 * kernel holds; a power loss falls back to the mark an `fdatasync` made durable). A failure that
 * says nothing against the bytes (an interruption, a lost Server or Computer, a pull too slow)
 * writes what was committed, records it and keeps the file; any other removes it.
 */
export class FileSink implements Sink<FileSinkResult> {
  readonly partial: string;
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

  /** The trailer's record (none for a write without an identity, which cannot be resumed). */
  private record: PartialRecord | undefined;
  private seq = 0;
  private recording: Promise<void> = Promise.resolve();
  /** The read's running hash, marks taken from it and not recorded yet, and where they stand. */
  private hash: Hash | undefined;
  private marks: Mark[] = [];
  private markedTo = 0;
  private committedEnd = 0;
  private writtenEnd = 0;
  private ticker: NodeJS.Timeout | undefined;
  private claimed = false;
  /** The partial file is this download's (it replaced or adopted what was there). */
  private owned = false;

  constructor(
    readonly path: string,
    private readonly opts: FileSinkOptions = {},
  ) {
    this.partial = partialPath(path);
  }

  async resumeHint(): Promise<number> {
    if (!this.opts.resume) return 0;
    try {
      const fh = await open(this.partial, "r");
      try {
        return (await readRecord(fh))?.mark.offset ?? 0;
      } finally {
        await fh.close();
      }
    } catch {
      return 0;
    }
  }

  async resume(id: {
    totalSize: number;
    sha256: string;
    mimeType: string;
  }): Promise<{ offset: number; hash: Hash } | undefined> {
    if (!this.opts.resume) return undefined;
    this.claim();
    let fh: FileHandle;
    try {
      fh = await open(this.partial, "r+");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw this.named(err, id.totalSize);
    }
    const tell = (e: ResumeEvent): void => this.opts.onResume?.(e);
    try {
      const rec = await readRecord(fh);
      if (!rec) tell({ kind: "unusable", partial: this.partial, why: "it has no valid record" });
      else if (rec.sha256 !== id.sha256 || rec.totalSize !== id.totalSize) {
        const was = { sha256: rec.sha256, totalSize: rec.totalSize };
        tell({ kind: "changed", partial: this.partial, was });
      } else {
        const v = await verifyPrefix(fh, rec);
        if (v.offset > 0) {
          this.fh = fh;
          this.owned = true;
          this.size = id.totalSize;
          const mark = { offset: v.offset, sha256: v.hash.copy().digest("hex") };
          this.record = { ...rec, ...this.opts.source, mark };
          this.seq = rec.seq + 1;
          this.restartMarks(v.hash, v.offset);
          tell({
            kind: "resumed",
            partial: this.partial,
            offset: v.offset,
            totalSize: rec.totalSize,
          });
          return v;
        }
        tell({ kind: "unusable", partial: this.partial, why: "its bytes do not match its record" });
      }
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw this.named(err, id.totalSize);
    }
    await fh.close();
    return undefined;
  }

  async begin(totalSize: number, read?: ReadStart): Promise<void> {
    if (!Number.isSafeInteger(totalSize)) {
      throw new BlobTooLargeError(totalSize, Number.MAX_SAFE_INTEGER, "file");
    }
    this.claim();
    // A restart drops what the previous read left unwritten, and waits for its write in flight
    // (it would land after the truncate).
    this.dropBatches();
    await this.writing;
    await this.recording;
    this.throwWriteError();
    const id = read && { totalSize, sha256: read.sha256, mimeType: read.mimeType };
    this.record = id && freshRecord(id, this.opts.source ?? {});
    try {
      // "w" replaces a partial file an earlier download left.
      this.owned = true;
      this.fh ??= await open(this.partial, "w", 0o644);
      await this.fh.truncate(totalSize + (this.record ? TRAILER_BYTES : 0));
      if (this.record) await writeRecord(this.fh, this.record, this.seq++);
    } catch (err) {
      throw this.named(err, totalSize);
    }
    this.size = totalSize;
    this.restartMarks(read?.hash, 0);
  }
  commit(offset: number, bytes: Buffer): Promise<void> | void {
    if (!this.fh) throw new Error("FileSink.commit before begin");
    if (this.writeError !== undefined) return Promise.reject(this.named(this.writeError));
    let batch = this.batches[this.batches.length - 1];
    if (!batch || batch.sealed || batch.end !== offset || batch.room < bytes.length) {
      if (batch) batch.sealed = true;
      // The read's hash covers exactly the bytes before `offset` now.
      if (offset === this.committedEnd) this.mark(offset);
      batch = new WriteBatch(offset, this.batchBuffer(bytes.length));
      this.batches.push(batch);
    }
    batch.add(bytes);
    this.committedEnd = offset + bytes.length;
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
    this.stopTicker();
    await this.flush();
    await this.writeback;
    await this.recording;
    this.throwWriteError();
    const fh = this.fh;
    if (!fh) throw new Error("FileSink.finish before begin");
    try {
      if (this.record) await fh.truncate(this.size);
      await fh.sync();
      await fh.close();
      this.fh = undefined;
      await rename(this.partial, this.path);
    } catch (err) {
      throw this.named(err);
    }
    this.unclaim();
    return { path: this.path, size: this.size, writes: this.writes, writebacks: this.writebacks };
  }
  async abort(reason?: unknown): Promise<void> {
    this.stopTicker();
    let keep = this.record !== undefined && this.committedEnd > 0 && worthKeeping(reason);
    try {
      if (keep) keep = await this.keepForResume();
      else this.dropBatches();
      await this.writing;
      await this.writeback;
      await this.recording;
      await this.fh?.close();
    } catch {
      keep = false;
    }
    this.fh = undefined;
    // A download that failed before it began leaves an earlier one's partial file alone.
    if (!keep && this.owned) await unlink(this.partial).catch(() => undefined);
    this.unclaim();
  }

  /** Writes every committed byte and records it durably; false when that failed. */
  private async keepForResume(): Promise<boolean> {
    await this.flush();
    this.mark(this.committedEnd);
    this.checkpoint();
    await this.recording;
    if (this.writeError !== undefined || !this.fh || !this.record) return false;
    await this.fh.datasync();
    this.record = { ...this.record, durable: this.record.mark };
    this.saveRecord();
    await this.recording;
    return this.writeError === undefined;
  }

  /** Seals what is gathered and waits until every batch is written. */
  private async flush(): Promise<void> {
    const last = this.batches[this.batches.length - 1];
    if (last) last.sealed = true;
    this.pump();
    while (this.writing) await this.writing;
  }

  private claim(): void {
    if (this.claimed) return;
    if (partialsInUse.has(this.partial)) {
      throw new FileWriteError(this.path, new Error("another download to it is in progress"));
    }
    partialsInUse.add(this.partial);
    this.claimed = true;
  }
  private unclaim(): void {
    if (this.claimed) partialsInUse.delete(this.partial);
    this.claimed = false;
  }

  /** A new read's marks: none yet, the hash it runs, and the ticker that seals slow batches. */
  private restartMarks(hash: Hash | undefined, at: number): void {
    this.hash = hash;
    this.marks = [];
    this.markedTo = this.committedEnd = this.writtenEnd = at;
    this.stopTicker();
    if (!hash) return;
    this.ticker = setInterval(() => this.tick(), FILE_CHECKPOINT_MS / 2);
    this.ticker.unref();
  }
  private stopTicker(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  /** Writes a batch that waited too long, and marks what is committed (the hash covers it now). */
  private tick(): void {
    const last = this.batches[this.batches.length - 1];
    if (last && !last.sealed && performance.now() - last.startedAt >= FILE_CHECKPOINT_MS) {
      last.sealed = true;
      this.pump();
    }
    this.mark(this.committedEnd);
    this.checkpoint();
  }

  /** A mark at `offset`, which the read's hash covers exactly now. */
  private mark(offset: number): void {
    if (!this.hash || offset <= this.markedTo) return;
    let sha256: string;
    try {
      sha256 = this.hash.copy().digest("hex");
    } catch {
      // The read digested its hash (its last byte is in): nothing more to mark for it.
      this.hash = undefined;
      return;
    }
    this.marks.push({ offset, sha256 });
    this.markedTo = offset;
  }

  /** Records the newest mark whose bytes are written, if it is newer than the record's. */
  private checkpoint(): void {
    const rec = this.record;
    if (!rec) return;
    let best: Mark | undefined;
    for (const m of this.marks) if (m.offset <= this.writtenEnd) best = m;
    if (!best || best.offset <= rec.mark.offset) return;
    const done = best.offset;
    this.marks = this.marks.filter((m) => m.offset > done);
    this.record = { ...rec, mark: best };
    this.saveRecord();
  }

  /** Writes the record in turn after those before it (a failure is the download's). */
  private saveRecord(): void {
    const fh = this.fh;
    const rec = this.record;
    if (!fh || !rec) return;
    const seq = this.seq++;
    this.recording = this.recording
      .then(() => writeRecord(fh, rec, seq))
      .catch((err: unknown) => void (this.writeError ??= err));
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
      this.writtenEnd = Math.max(this.writtenEnd, batch.end);
      this.checkpoint();
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

  /**
   * A background `fdatasync` once enough was written since the last (one in flight at most).
   * The mark recorded before it is durable once it is done.
   */
  private startWriteback(fh: FileHandle, written: number): void {
    this.unsynced += written;
    if (this.writeback || this.unsynced < FILE_WRITEBACK_BYTES) return;
    this.unsynced = 0;
    this.writebacks++;
    const rec = this.record;
    // A failure is the download's: the kernel reports a writeback error once per descriptor, so
    // the fsync at the end would not see it again.
    this.writeback = fh
      .datasync()
      .then(() => {
        const now = this.record;
        if (rec && now && now.sha256 === rec.sha256 && rec.mark.offset > now.durable.offset) {
          this.record = { ...now, durable: rec.mark };
        }
      })
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
