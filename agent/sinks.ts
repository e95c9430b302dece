/**
 * Where pulled bytes go. The pull hands a sink each chunk's bytes strictly in offset order, once
 * they are hashed (docs/protocol.md §6.9). A sink copies what it keeps before `commit` returns:
 * the pull then gives the chunk's bytes back to the client, which decodes the next ones into
 * them (agent/client.ts, `DecodeBuffers`).
 * - `BufferSink`: one Buffer allocated once the size is known and fits (D45); chunks copied in.
 * - `FileSink`: a partial file next to the target (`<target>.a2c-part`, partial-file.ts), written
 *   in large batches (one positional write per few MiB), fsync + rename at the end: the target
 *   never holds a partial file, and a failed download (a full disk too) leaves what was there.
 *   An interrupted one keeps the partial file, which a later download resumes (D85).
 * - `StreamSink`: an in-order async iterable of chunks (the consumer's own copies) with
 *   backpressure.
 * Memory stays bounded by the pull's window, whatever the blob's size.
 */
import { constants as bufferConstants } from "node:buffer";
import type { Hash } from "node:crypto";
import { BlobChangedError, BlobTooLargeError, asError } from "./errors.ts";

export {
  FILE_CHECKPOINT_MS,
  FILE_WRITEBACK_BYTES,
  FILE_WRITE_BATCH_BYTES,
  FileSink,
  type FileSinkOptions,
  type FileSinkResult,
  type ResumeEvent,
} from "./file-sink.ts";

/** A read's identity, and its running sha256: at each commit, of the bytes before its offset. */
export interface ReadStart {
  sha256: string;
  mimeType: string;
  hash: Hash;
}

export interface Sink<R> {
  /**
   * Prepares a (re)read of `totalSize` bytes: called at the start and at every restart. A size
   * the sink cannot hold is a `BlobTooLargeError`, thrown before anything is allocated.
   */
  begin(totalSize: number, read?: ReadStart): Promise<void>;
  /**
   * Offers to go on from bytes of this content the sink already holds (a partial file an
   * earlier process left): their length and a sha256 that hashed them, or undefined (then
   * `begin` follows). Asked once, before the first `begin`.
   */
  resume?(id: {
    totalSize: number;
    sha256: string;
    mimeType: string;
  }): Promise<{ offset: number; hash: Hash } | undefined>;
  /** Where `resume` would likely go on (nothing checked yet): the first request asks there. */
  resumeHint?(): Promise<number>;
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
