/**
 * One logical read of a pull (docs/protocol.md §6.9; D16, D18, D19, D42–D44, D87): the offsets
 * it asks, as a flow of the path to its Computer (path.ts sends them under the path's budget and
 * hands back each answer or failure), the requests it asks again, and the bytes it has, handed
 * in order to its sink (sinks.ts, `InOrder`). pull.ts runs reads until one verifies.
 * 1. The chunk at offset 0 (or where a resume goes on) is asked ALONE: its answer teaches the
 *    read's identity (`total_size`, `sha256`, `mime_type`), the Computer's clamp and carriage.
 * 2. The rest is asked in offsets; each answer is placed by its own `chunk_offset` (the client
 *    checked it); a short answer's tail is asked again, never a shifted plan.
 * 3. An answer of another identity is drift: the read ends with `Restart`, as does a final digest
 *    other than `sha256`. A failed request is asked again (the retry queue): after about a round
 *    trip for `busy`, at once for a lost answer, after a backoff for another 500. Only a Computer
 *    or socket that went away makes the read wait and resume (`waitForComputer`).
 */
import type { Hash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { IDENTITY, type ContentCoding } from "@a2c-smcp/protocol";
import {
  BlobNotAccessibleError,
  ChunkContractError,
  RequestTimeoutError,
  abortError,
  asError,
} from "./errors.ts";
import type { AgentLogger } from "./logger.ts";
import {
  AnswerJudge,
  failureKind,
  type BlobChunk,
  type Carriage,
  type ChunkFetcher,
  type ChunkWork,
  type ComputerPath,
  type PathFlow,
  type PullStats,
  type RateGate,
  type SpeedGuard,
} from "./path.ts";
import { InOrder, type Sink } from "./sinks.ts";

export interface PullInfo {
  totalSize: number;
  sha256: string;
  mimeType: string;
  /**
   * How the verified read's chunks travelled: `binary` when every one came as a binary
   * attachment, `base64` when any came as a string; `null` when the bytes came from the cache.
   */
  carriage: Carriage | null;
  stats: PullStats;
}

/** Thrown inside a read to start again from offset 0. */
export class Restart extends Error {
  constructor(readonly why: "drift" | "mismatch" | "range") {
    super(`restart: ${why}`);
  }
}

/** What the chunk at offset 0 taught; every later answer must agree with it. */
export interface BlobIdentity {
  total: number;
  sha: string;
  mime: string;
}

/**
 * How a read begins once its identity is known: served from the cache, or the sink ready, going
 * on `from` the bytes it already held of this content (a resume) or from 0.
 */
export type Begun = { cached: PullInfo } | { from: { offset: number; hash: Hash } | undefined };

/** A pull's options as its reads use them (pull.ts resolves them, defaults applied). */
export interface ReadSettings {
  /** The most requests in flight. */
  window: number;
  /** The largest chunk asked, until a Computer clamps lower. */
  chunkCeiling: number;
  /** The ceiling once a Computer answered a binary request in base64; undefined: keep it. */
  base64Ceiling: number | undefined;
  binary: boolean;
  codings: readonly ContentCoding[] | undefined;
  /** A fixed ack wait per chunk; undefined: the path's deadlines. */
  timeoutMs: number | undefined;
  /** Resumes in a row without a byte, and other 500s in a row, before the read fails. */
  retries: number;
  stallTimeoutMs: number;
  resumeTimeoutMs: number;
  onProgress: ((p: { bytes: number; total: number }) => void) | undefined;
  /** A fresh minimum progress rule (one per read). */
  speed: () => SpeedGuard;
}

/** What every read of one pull shares. */
export interface PullContext<R> {
  fetcher: ChunkFetcher;
  computer: string;
  handle: string;
  sink: Sink<R>;
  path: ComputerPath;
  settings: ReadSettings;
  log: AgentLogger;
  stats: PullStats;
  /** The pull's own signal (aborted by the caller's, or when the pull ends). */
  signal: AbortSignal;
  /** The rate caps its requests wait for. */
  gate: RateGate;
  /** Where a read's first request goes: where a resume would go on (the first read), else 0. */
  firstOffset: number;
}

/** A request of a read, with the resume generation it was asked in. */
interface ReadWork extends ChunkWork {
  epoch: number;
}

/**
 * The requests a read asks again before any new offset, each not before its time: tails of short
 * answers and requests that failed (performance.now() ms).
 */
class RetryQueue {
  private readonly queue: { work: ReadWork; at: number }[] = [];

  get size(): number {
    return this.queue.length;
  }

  /** Asks `work` again first, not before `at`. */
  add(work: ReadWork, at: number): void {
    this.queue.unshift({ work, at });
  }

  /**
   * The first request due at `now` (only the one at `offset`, when given), at most `maxLen`
   * long: a longer one (the path's chunk size shrank) is split.
   */
  take(
    now: number,
    offset: number | undefined,
    maxLen: number,
    epoch: number,
  ): ReadWork | undefined {
    const i = this.queue.findIndex(
      (r) => r.at <= now && (offset === undefined || r.work.offset === offset),
    );
    if (i < 0) return undefined;
    const w = this.queue[i]!.work;
    if (w.len <= maxLen) {
      this.queue.splice(i, 1);
      return { ...w, epoch };
    }
    this.queue[i]!.work = { offset: w.offset + maxLen, len: w.len - maxLen, epoch: w.epoch };
    return { offset: w.offset, len: maxLen, epoch };
  }

  /** The earliest time after `now` a request falls due (infinity when none). */
  nextAfter(now: number): number {
    let due = Number.POSITIVE_INFINITY;
    for (const r of this.queue) if (r.at > now) due = Math.min(due, r.at);
    return due;
  }
}

/** One logical read; see the file's comment. */
export class Read<R> implements PathFlow {
  readonly handle: string;
  readonly signal: AbortSignal;
  readonly window: number;
  readonly timeoutMs: number | undefined;
  readonly codings: readonly ContentCoding[] | undefined;
  binary: boolean;
  chunkCeiling: number;

  private readonly settings: ReadSettings;
  private identity: BlobIdentity | undefined;
  private firstAsked = false;
  /** When the chunk at offset 0 may be asked (again). */
  private firstAt = 0;
  /** Requests of this read in flight. */
  private inflight = 0;
  /** The first offset no request has covered yet. */
  private cursor = 0;
  private readonly retryQueue = new RetryQueue();
  private retryTimer: NodeJS.Timeout | undefined;
  private base64Seen = false;

  /** The bytes in order: hashed and committed to the sink. */
  private readonly inOrder: InOrder;
  /** Bytes accepted so far, in any order (for progress). */
  private accepted = 0;
  private readonly maxHeld: number;
  /** Answer lengths against what was asked (clamps and slivers). */
  private readonly judge = new AnswerJudge();
  /** The minimum progress rule, and the timer that checks it. */
  private readonly speed: SpeedGuard;
  private speedTimer: NodeJS.Timeout | undefined;
  /** Wakes the path when the rate cap lets the next request go. */
  private gateTimer: NodeJS.Timeout | undefined;

  /** Bumped by every resume, so the failures of requests sent before it start no other. */
  private epoch = 0;
  private resuming = false;
  private resumesInARow = 0;
  private retriesInARow = 0;
  private lastByteAt = performance.now();

  private settled = false;
  private resolve: (info: PullInfo) => void = () => undefined;
  private reject: (err: Error) => void = () => undefined;
  private readonly onAbort = (): void => this.fail(abortError(this.signal));

  constructor(
    private readonly ctx: PullContext<R>,
    /** Begins the read at its first answer (pull.ts): from the cache, a resume, or offset 0. */
    private readonly begin: (id: BlobIdentity, hash: Hash) => Promise<Begun>,
  ) {
    const s = (this.settings = ctx.settings);
    this.handle = ctx.handle;
    this.signal = ctx.signal;
    this.window = s.window;
    this.timeoutMs = s.timeoutMs;
    this.binary = s.binary;
    this.codings = s.codings;
    this.chunkCeiling = s.chunkCeiling;
    this.maxHeld = this.window * 2;
    this.speed = s.speed();
    const release = (bytes: Buffer): void => ctx.fetcher.releaseChunk?.(bytes);
    this.inOrder = new InOrder(ctx.sink, release, (err) =>
      err === undefined ? this.committed() : this.fail(err),
    );
  }

  run(): Promise<PullInfo> {
    return new Promise<PullInfo>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      if (this.signal.aborted) return this.fail(abortError(this.signal));
      this.signal.addEventListener("abort", this.onAbort, { once: true });
      this.ctx.path.add(this);
    });
  }

  // --- what the path asks of a flow

  nextWork(maxLen: number): ChunkWork | undefined {
    if (this.settled || this.resuming || this.capped()) return undefined;
    if (!this.firstAsked) {
      if (performance.now() < this.firstAt) return undefined;
      this.firstAsked = true;
      const offset = this.ctx.firstOffset;
      return this.asked({ offset, len: maxLen, first: true, epoch: this.epoch });
    }
    const id = this.identity;
    if (!id) return undefined; // the first chunk is asked alone
    const full = this.inOrder.pending >= this.maxHeld;
    const only = full ? this.inOrder.prefix : undefined;
    const retry = this.retryQueue.take(performance.now(), only, maxLen, this.epoch);
    if (retry) return this.asked(retry);
    if (full || this.cursor >= id.total) return undefined;
    const len = Math.min(maxLen, id.total - this.cursor);
    const work = { offset: this.cursor, len, epoch: this.epoch };
    this.cursor += len;
    return this.asked(work);
  }

  answered(work: ChunkWork, chunk: BlobChunk): void {
    const stats = this.ctx.stats;
    this.ctx.gate.settle(work.len - chunk.wireBytes);
    stats.bytesReceived += chunk.bytes.length;
    stats.wireBytes += chunk.wireBytes;
    const coding = chunk.coding ?? IDENTITY;
    stats.codings[coding] = (stats.codings[coding] ?? 0) + 1;
    this.inflight--;
    if (this.settled) return;
    try {
      if (work.first) return this.firstAnswered(work as ReadWork, chunk);
      this.accept(work as ReadWork, chunk);
      this.checkStuck();
    } catch (err) {
      this.fail(err);
    }
  }

  failed(work: ChunkWork, err: unknown): void {
    this.ctx.gate.settle(work.len);
    this.inflight--;
    if (this.settled) return;
    const w = work as ReadWork;
    if (w.first) this.firstAsked = false;
    this.react(w, err);
    this.checkStuck();
  }

  private react(w: ReadWork, err: unknown): void {
    const stats = this.ctx.stats;
    const now = performance.now();
    switch (failureKind(err)) {
      case "busy":
        // Ask again after about a round trip; the path has slowed down meanwhile.
        stats.busy++;
        return this.retry(w, now + Math.max(this.ctx.path.rtt, 10), err);
      case "timeout":
        stats.timeouts++;
        return this.retry(w, now, err);
      case "retry": {
        if (++this.retriesInARow > this.settings.retries) return this.fail(err);
        const backoff = Math.min(50 * 2 ** (this.retriesInARow - 1), 2000);
        return this.retry(w, now + backoff, err);
      }
      case "gone":
        this.queueRetry(w, now);
        if (w.epoch === this.epoch) this.resume(err);
        return;
      case "final":
        if (w.first && w.offset > 0) {
          // A resume's first request past the end of a source that shrank: ask at 0 instead.
          this.ctx.firstOffset = 0;
          return this.queueRetry(w, now);
        }
        if (err instanceof BlobNotAccessibleError && err.reason === "range" && w.offset > 0) {
          // The offsets came from the learned size; a range refusal means the size changed
          // under us: learn it again from offset 0 (docs/protocol.md §6.7).
          return this.fail(new Restart("range"));
        }
        return this.fail(err);
    }
  }

  // --- the first answer

  /** Learns the read's identity from the chunk at offset 0, has the pull begin it, places it. */
  private firstAnswered(work: ReadWork, chunk: BlobChunk): void {
    const id = { total: chunk.totalSize, sha: chunk.sha256, mime: chunk.mimeType };
    // A Computer that answered a binary request in base64 does not honour D19: the rest of the
    // read asks in base64, at the base64 chunk size unless `chunkBytes` was given.
    if (this.binary && chunk.carriage === "base64") {
      this.binary = false;
      this.chunkCeiling = Math.min(this.chunkCeiling, this.settings.base64Ceiling ?? Infinity);
    }
    this.learnClamp(work, chunk);
    this.begin(id, this.inOrder.running)
      .then((begun) => {
        if (this.settled) return;
        if ("cached" in begun) return this.finish(begun.cached);
        this.identity = id;
        this.watchSpeed();
        if (begun.from || work.offset > 0) {
          this.resumed(begun.from ?? { offset: 0, hash: this.inOrder.running }, work, chunk);
        } else {
          this.cursor = chunk.bytes.length;
          this.accept(work, chunk);
        }
        this.ctx.path.wake();
      })
      .catch((err: unknown) => this.fail(err));
  }

  /**
   * Goes on from the sink's verified prefix (0 when it had none): the first answer's bytes that
   * continue it are kept, the others asked again in turn.
   */
  private resumed(from: { offset: number; hash: Hash }, work: ReadWork, chunk: BlobChunk): void {
    const f = from.offset;
    this.inOrder.startAt(f, from.hash);
    this.cursor = this.accepted = f;
    this.ctx.stats.resumedFrom = f;
    const end = work.offset + chunk.bytes.length;
    this.lastByteAt = performance.now();
    if (work.offset <= f && f < end) {
      this.accepted = this.cursor = end;
      this.inOrder.put(f, chunk.bytes.subarray(f - work.offset));
    } else this.ctx.fetcher.releaseChunk?.(chunk.bytes);
    this.settings.onProgress?.({ bytes: this.accepted, total: this.identity!.total });
    this.checkDone();
  }

  /**
   * A Computer that clamps `max_chunk_bytes` (D16): ask no more than it gives. One that keeps
   * answering slivers breaks the contract (`AnswerJudge`).
   */
  private learnClamp(work: ChunkWork, chunk: BlobChunk): void {
    const ceiling = this.judge.judge(work.offset, work.len, chunk.bytes.length, chunk.eof);
    if (ceiling !== undefined) this.chunkCeiling = Math.min(this.chunkCeiling, ceiling);
  }

  /**
   * Checks the minimum progress every tenth of its window, from the first answer on; a window
   * starts again while the sink holds the pull back.
   */
  private watchSpeed(): void {
    this.speed.start(performance.now());
    if (this.speed.limit <= 0) return;
    this.speedTimer = setInterval(() => {
      const now = performance.now();
      // Held back by its sink (a slow consumer, a slow disk): not the Computer's doing.
      if (this.inOrder.committing > 0 || this.inOrder.pending >= this.maxHeld) {
        return this.speed.start(now);
      }
      const slow = this.speed.check(now);
      if (slow) this.fail(slow);
    }, this.speed.timeMs / 10);
    this.speedTimer.unref();
  }

  /** Whether the rate cap holds the next request back (the path is woken when it may go). */
  private capped(): boolean {
    const gate = this.ctx.gate;
    if (!gate.active || this.gateTimer) return this.gateTimer !== undefined;
    const wait = gate.wait(performance.now());
    if (wait <= 0) return false;
    this.gateTimer = setTimeout(() => {
      this.gateTimer = undefined;
      this.ctx.path.wake();
    }, wait);
    return true;
  }

  // --- answers: checks and placement

  /**
   * Takes the answer to `work`: checks that it belongs to this read (`Restart` on drift), puts
   * its bytes in order, and asks again for the unanswered tail of a short answer.
   */
  private accept(work: ReadWork, chunk: BlobChunk): void {
    const id = this.identity!;
    if (chunk.totalSize !== id.total || chunk.sha256 !== id.sha || chunk.mimeType !== id.mime) {
      throw new Restart("drift");
    }
    const len = chunk.bytes.length;
    if (chunk.carriage === "base64") this.base64Seen = true;
    if (!work.first) this.learnClamp(work, chunk);
    this.lastByteAt = performance.now();
    this.speed.add(len, this.lastByteAt);
    this.resumesInARow = 0;
    this.retriesInARow = 0;
    this.accepted += len;
    // The first answer's tail is not asked again: the offsets go on where it ended.
    if (!work.first && len < work.len && work.offset + len < id.total) {
      const rest = Math.min(work.len - len, id.total - work.offset - len);
      this.retryQueue.add({ offset: work.offset + len, len: rest, epoch: this.epoch }, 0);
    }
    this.inOrder.put(work.offset, chunk.bytes);
    this.settings.onProgress?.({ bytes: this.accepted, total: id.total });
    this.checkDone();
  }

  private committed(): void {
    if (this.settled) return;
    this.checkDone();
    this.ctx.path.wake();
  }

  private checkDone(): void {
    const id = this.identity;
    const order = this.inOrder;
    if (this.settled || !id || order.prefix < id.total || order.committing > 0) return;
    const digest = order.digest();
    if (digest !== id.sha) {
      this.ctx.log.warn(
        { computer: this.ctx.computer, expected: id.sha, actual: digest },
        "blob sha256 mismatch",
      );
      return this.fail(new Restart("mismatch"));
    }
    this.finish({
      totalSize: id.total,
      sha256: id.sha,
      mimeType: id.mime,
      carriage: this.base64Seen ? "base64" : "binary",
      stats: this.ctx.stats,
    });
  }

  // --- failed requests: the retry queue

  /** Asks `work` again at `at`, unless requests have failed without a byte for too long. */
  private retry(work: ReadWork, at: number, err: unknown): void {
    if (performance.now() - this.lastByteAt > this.settings.stallTimeoutMs) return this.fail(err);
    this.queueRetry(work, at);
  }

  /** Asks `work` again at `at` (the first request: it is asked alone, as before). */
  private queueRetry(work: ReadWork, at: number): void {
    if (work.first) this.firstAt = at;
    else this.retryQueue.add(work, at);
    this.wakeAtNextRetry();
  }

  /**
   * Wakes the path when the earliest request to ask again is due (one timer). Those due already
   * go out when the path wakes after the event that queued them.
   */
  private wakeAtNextRetry(): void {
    const now = performance.now();
    const first = !this.firstAsked && this.firstAt > now ? this.firstAt : Infinity;
    const due = Math.min(first, this.retryQueue.nextAfter(now));
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (!Number.isFinite(due)) return;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = undefined;
        this.ctx.path.wake();
        this.wakeAtNextRetry();
      },
      Math.ceil(due - now),
    );
  }

  /**
   * Nothing in flight, nothing to ask again, no write or resume pending, every offset asked,
   * the prefix short: nothing will ever move this read again. A consistent read cannot get
   * here; a logic slip is an error, not a hang.
   */
  private checkStuck(): void {
    const id = this.identity;
    const order = this.inOrder;
    if (this.settled || !id || this.inflight > 0 || this.resuming || order.committing > 0) return;
    if (this.retryQueue.size > 0 || this.cursor < id.total || order.prefix >= id.total) return;
    this.fail(new ChunkContractError(order.prefix, "no chunk covers this offset"));
  }

  /** The Computer or our socket went away: wait for it, then go on where the read stood. */
  private resume(err: unknown): void {
    if (this.resuming) return;
    if (++this.resumesInARow > this.settings.retries) return this.fail(err);
    this.resuming = true;
    this.speed.pause();
    this.epoch++;
    const { fetcher, computer, stats, log, signal } = this.ctx;
    const attempt = this.resumesInARow;
    stats.resumes++;
    log.info({ computer, err: String(err), attempt }, "blob pull resuming");
    fetcher
      .waitForComputer(computer, { signal, timeoutMs: this.settings.resumeTimeoutMs })
      // Listed again; a short backoff keeps a flapping peer from burning retries. (An abort
      // ended the read already: the backoff's rejection finds it settled.)
      .then(() => sleep(Math.min(50 * 2 ** (attempt - 1), 2000), undefined, { signal }))
      .then(
        () => {
          this.resuming = false;
          this.speed.start(performance.now());
          this.ctx.path.wake();
        },
        (waitErr: unknown) => {
          // A wait that timed out reports the failure that started it.
          this.fail(waitErr instanceof RequestTimeoutError ? err : waitErr);
        },
      );
  }

  // --- the end

  private finish(info: PullInfo): void {
    if (this.settled) return;
    this.end();
    this.resolve(info);
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.end();
    this.reject(asError(err));
  }

  private end(): void {
    this.settled = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.gateTimer);
    clearInterval(this.speedTimer);
    this.signal.removeEventListener("abort", this.onAbort);
    this.ctx.path.remove(this);
    this.inOrder.clear();
  }

  /** Counts a request about to be sent. */
  private asked(work: ReadWork): ReadWork {
    this.ctx.gate.take(work.len, performance.now());
    this.ctx.stats.requests++;
    this.inflight++;
    return work;
  }
}
