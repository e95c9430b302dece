/**
 * Window scheduling of one logical read, after its first chunk: which offsets are in flight,
 * which are asked again (the tail of a short answer, a chunk whose request failed), and when the
 * read pauses to resume because the Computer or our socket went away. Every answer goes to the
 * reassembly (pull-reassembly.ts), which checks it, places it and hashes the bytes in order.
 */
import type { GetBlobRet } from "@a2c-smcp/protocol";
import { BlobNotAccessibleError, ChunkContractError, abortError, asError } from "./errors.ts";
import type { Work } from "./pull-chunk.ts";
import type { Reassembly } from "./pull-reassembly.ts";
import { Restart, isTransient } from "./pull-resume.ts";
import type {
  Carriage,
  ChunkFetcher,
  ChunkRequest,
  DecodeTarget,
  PullStats,
} from "./pull-types.ts";
import type { Sink } from "./sinks.ts";

/** What the window asks, learned from the first chunk. */
export interface WindowPlan {
  /** The first offset no request has covered yet. */
  start: number;
  /** Bytes per request. */
  step: number;
  /** Ask for binary carriage (D19). */
  binary: boolean;
}

/** What the window needs from its pull. */
export interface WindowContext<R> {
  fetcher: ChunkFetcher;
  computer: string;
  handle: string;
  sink: Sink<R>;
  window: number;
  /** Consecutive resumes without progress before the read fails. */
  retries: number;
  timeoutMs: number | undefined;
  /** The pull's own signal: aborting it ends the read. */
  signal: AbortSignal;
  stats: PullStats;
  /** Waits until the Computer can be asked again (pull-resume.ts `waitToResume`). */
  resume(err: unknown, attempt: number): Promise<void>;
}

/**
 * One request in flight: what was asked, and the region its base64 answer is decoded into inside
 * the ack callback (never more than asked: a longer answer stays a string, and is rejected).
 */
class Flight<R> implements ChunkRequest, DecodeTarget {
  readonly offset: number;
  readonly maxChunkBytes: number;
  readonly decodeInto: DecodeTarget = this;
  region: Buffer | undefined;

  constructor(
    private readonly owner: ChunkWindow<R>,
    readonly work: Work,
    readonly epoch: number,
    readonly binary: boolean,
    readonly signal: AbortSignal,
    readonly timeoutMs: number | undefined,
  ) {
    this.offset = work.offset;
    this.maxChunkBytes = work.len;
  }

  take(len: number): Buffer | undefined {
    // Never after the read settled: a late answer must not write into a destination that a
    // restarted read (same Buffer) already filled and hashed.
    if (this.owner.settled || len > this.work.len) return undefined;
    return (this.region = this.owner.sink.region(this.work.offset, len));
  }

  give(bytes: Buffer): void {
    this.owner.sink.discard(bytes);
    this.region = undefined;
  }

  /** The region, unless the answer's bytes are in it. */
  dropRegion(): void {
    if (this.region !== undefined) this.owner.sink.discard(this.region);
    this.region = undefined;
  }
}

export class ChunkWindow<R> {
  /** Set once the read succeeded or failed: later answers are dropped. */
  settled = false;
  private cursor: number;
  /** Asked before any new offset: tails of short answers and chunks whose request failed. */
  private readonly queue: Work[] = [];
  private inflight = 0;
  private failure: unknown;
  private recovering = false;
  /** Bumped by every recovery, so the failures of requests sent before it start no other. */
  private epoch = 0;
  private noProgress = 0;
  private base64Seen = false;
  private resolve: () => void = () => undefined;
  private reject: (err: Error) => void = () => undefined;
  private readonly onAbort = (): void => this.finish(abortError(this.ctx.signal));

  constructor(
    private readonly ctx: WindowContext<R>,
    private readonly reassembly: Reassembly<R>,
    private readonly plan: WindowPlan,
  ) {
    this.cursor = plan.start;
    reassembly.wake = () => this.wake();
  }

  get sink(): Sink<R> {
    return this.ctx.sink;
  }

  /** `base64` when any answer of the window came as a string. */
  get carriage(): Carriage {
    return this.base64Seen ? "base64" : "binary";
  }

  /** Runs the window until every byte is hashed (or the read fails). */
  run(): Promise<void> {
    const signal = this.ctx.signal;
    return new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      if (signal.aborted) return this.finish(abortError(signal));
      signal.addEventListener("abort", this.onAbort, { once: true });
      this.wake();
    }).finally(() => this.reassembly.release());
  }

  /** Issues what may be issued, or ends the read. Called after every event that changes that. */
  wake(): void {
    if (this.settled) return;
    const r = this.reassembly;
    if (r.failure !== undefined) this.failure ??= r.failure;
    if (this.failure !== undefined) return this.finish(this.failure);
    if (r.complete && this.inflight === 0) return this.finish();
    while (!this.recovering && this.inflight < this.ctx.window) {
      const w = r.full ? this.takeQueued(r.nextNeeded) : this.nextWork();
      if (!w) break;
      this.issue(w);
    }
    // Nothing in flight, no write or recovery pending, prefix short: nothing will ever wake this
    // read again. A consistent plan cannot get here; a logic slip is an error, not a hang.
    if (!this.recovering && this.inflight === 0 && r.idle && r.nextNeeded < r.total) {
      this.finish(new ChunkContractError(r.nextNeeded, "no chunk covers this offset"));
    }
  }

  private finish(err?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.ctx.signal.removeEventListener("abort", this.onAbort);
    if (err !== undefined) this.reject(asError(err));
    else this.resolve();
  }

  private nextWork(): Work | undefined {
    const q = this.queue.shift();
    if (q) return q;
    const total = this.reassembly.total;
    if (this.cursor >= total) return undefined;
    const w = { offset: this.cursor, len: Math.min(this.plan.step, total - this.cursor) };
    this.cursor += w.len;
    return w;
  }

  /**
   * Memory is full of chunks waiting for the one at the prefix: that one (queued again after a
   * failure) must still go out, or the read would wait forever.
   */
  private takeQueued(offset: number): Work | undefined {
    const i = this.queue.findIndex((q) => q.offset === offset);
    return i >= 0 ? this.queue.splice(i, 1)[0] : undefined;
  }

  private issue(w: Work): void {
    const c = this.ctx;
    this.inflight++;
    c.stats.requests++;
    const f = new Flight(this, w, this.epoch, this.plan.binary, c.signal, c.timeoutMs);
    c.fetcher.getBlobChunk(c.computer, c.handle, f).then(
      (ret) => this.answered(f, ret),
      (err: unknown) => this.failed(f, err),
    );
  }

  private answered(f: Flight<R>, ret: GetBlobRet): void {
    this.inflight--;
    if (this.settled) return f.dropRegion();
    try {
      const decoded = f.region !== undefined && ret.blob === f.region;
      if (!decoded) f.dropRegion();
      if (decoded || typeof ret.blob === "string") this.base64Seen = true;
      const tail = this.reassembly.accept(f.work, ret, decoded ? f.region : undefined);
      f.region = undefined;
      if (tail) this.queue.unshift(tail);
      this.noProgress = 0;
    } catch (err) {
      f.dropRegion();
      this.failure ??= err;
    }
    this.wake();
  }

  private failed(f: Flight<R>, err: unknown): void {
    this.inflight--;
    f.dropRegion();
    if (this.settled) return;
    if (isTransient(err)) {
      this.queue.unshift(f.work); // held bytes stay; only this chunk is asked again
      if (f.epoch === this.epoch) this.startRecovery(err);
    } else if (err instanceof BlobNotAccessibleError && err.reason === "range" && f.offset > 0) {
      // The plan came from the learned size; a range refusal means the size changed under us:
      // learn it again from offset 0 (docs/protocol.md, "The blob transport": range).
      this.failure ??= new Restart("range");
    } else {
      this.failure ??= err;
    }
    this.wake();
  }

  private startRecovery(err: unknown): void {
    if (this.recovering) return;
    this.noProgress++;
    if (this.noProgress > this.ctx.retries) {
      this.failure = err;
      return;
    }
    this.recovering = true;
    this.epoch++;
    this.ctx.resume(err, this.noProgress).then(
      () => {
        this.recovering = false;
        this.wake();
      },
      (e: unknown) => {
        this.recovering = false;
        this.failure ??= isTransient(e) ? err : e;
        this.wake();
      },
    );
  }
}
