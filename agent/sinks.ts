/**
 * Where pulled bytes go, in order. `InOrder` takes a read's checked chunks in any order and hands
 * its sink each chunk's bytes strictly in offset order, hashing them as the contiguous prefix
 * grows (docs/protocol.md §6.9). A sink copies what it keeps before `commit` returns: the chunk's
 * bytes then go back to the client, which decodes the next ones into them (agent/client.ts,
 * `DecodeBuffers`).
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
import { createHash, type Hash } from "node:crypto";
import { BlobChangedError, BlobTooLargeError, asError } from "./errors.ts";

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

/**
 * A read's chunks put in order: each is held until the bytes before it are in, then committed to
 * the sink and hashed. `settled` hears of each commit the sink finished later (it answered with a
 * promise) and of a failed one; `release` takes back the bytes of a chunk once committed.
 */
export class InOrder {
  /** Bytes committed and hashed, in order: the read is whole when this reaches its size. */
  prefix = 0;
  /** Commits whose bytes the sink still holds in memory (it answered with a promise). */
  committing = 0;
  /** The sha256 of the prefix (a resume hands over one that hashed the partial file's prefix). */
  private hash: Hash = createHash("sha256");
  /** Checked chunks waiting for the prefix to reach them. */
  private readonly held = new Map<number, Buffer>();

  constructor(
    private readonly sink: Sink<unknown>,
    private readonly release: (bytes: Buffer) => void,
    private readonly settled: (err?: unknown) => void,
  ) {}

  /** Chunks held or still being committed: what the read keeps in memory besides the sink. */
  get pending(): number {
    return this.held.size + this.committing;
  }

  /** The running hash, for a sink that takes digests at its commits (`ReadStart`). */
  get running(): Hash {
    return this.hash;
  }

  /** Goes on from `offset` bytes the sink already holds, hashed by `hash`. */
  startAt(offset: number, hash: Hash): void {
    this.prefix = offset;
    this.hash = hash;
  }

  /** Holds `bytes` at `offset`, and commits whatever now continues the prefix. */
  put(offset: number, bytes: Buffer): void {
    if (bytes.length > 0) this.held.set(offset, bytes);
    for (let next = this.held.get(this.prefix); next; next = this.held.get(this.prefix)) {
      this.held.delete(this.prefix);
      const at = this.prefix;
      this.prefix += next.length;
      // Committed before it is hashed: at a commit the sink may take the digest of the bytes
      // before it (a file sink's resume marks).
      const p = this.sink.commit(at, next);
      this.hash.update(next);
      // The sink copied what it keeps: the client may decode another chunk into these bytes.
      this.release(next);
      if (!p) continue;
      this.committing++;
      p.then(
        () => {
          this.committing--;
          this.settled();
        },
        (err: unknown) => {
          this.committing--;
          this.settled(err);
        },
      );
    }
  }

  /** The hex sha256 of the prefix (once: the hash is spent). */
  digest(): string {
    return this.hash.digest("hex");
  }

  /** Gives back every chunk still held (the read ended). */
  clear(): void {
    for (const bytes of this.held.values()) this.release(bytes);
    this.held.clear();
  }
}
