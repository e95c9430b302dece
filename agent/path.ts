/**
 * The path from one `AgentClient` to one Computer, as its pulls see it (docs/protocol.md §6.9;
 * D40–D43, D99..4): the scheduler that sends every pull's requests to that Computer
 * through that client, in turn, so pulls share one budget evenly whatever their carriage. It does
 * the I/O (requests, the one deadline timer) and leaves every decision to its `PathController`
 * (agent/path-controller.ts): how many bytes may be in flight, how big a chunk is, when a request
 * is late. Together the pulls never queue much more than the target delay of bytes in front of
 * the client's other requests to that Computer.
 *
 * Below the scheduler, what a pull holds its requests and answers to on the path (D87): the gate
 * of its rate caps (rate-limit.ts), a minimum progress rule (curl's `--speed-limit` /
 * `--speed-time`), and the judgment of answers far shorter than asked. Passive objects: the time
 * is an argument.
 */
import {
  ChunkContractError,
  ComputerNotFoundError,
  DisconnectedError,
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  TooSlowError,
} from "./errors.ts";
import type { ContentCoding } from "@a2c-smcp/protocol";
import type { AgentLogger } from "./logger.ts";
import {
  MAX_CHUNK_DEADLINE_MS,
  PathController,
  type PathState,
  type SendTicket,
} from "./path-controller.ts";
import type { RateLimit } from "./rate-limit.ts";

/** How a chunk's bytes travelled: a base64 string (the spec's form) or a binary attachment (D19). */
export type Carriage = "base64" | "binary";

/** One `client:get_blob` as the pull asks it. */
export interface ChunkRequest {
  offset: number;
  /** Sent as `max_chunk_bytes` when > 0. */
  maxChunkBytes: number;
  /** Ask for `blob_format: "binary"` (D19); false sends no `blob_format` at all. */
  binary: boolean;
  /** Content-codings accepted, most wanted first (`content_encoding`, D63); none: not sent. */
  codings?: readonly ContentCoding[];
  /** The local ack wait; the client's request timeout when absent. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A `client:get_blob` answer checked against what was asked, its bytes decoded. */
export interface BlobChunk {
  offset: number;
  bytes: Buffer;
  eof: boolean;
  totalSize: number;
  sha256: string;
  mimeType: string;
  carriage: Carriage;
  /** The answer's `content_encoding` (D63): `identity` or a coding; null when it had none. */
  coding: string | null;
  /** Bytes of `blob` as they travelled: base64 characters, or the attachment's bytes. */
  wireBytes: number;
}

/** What a pull needs from a connection (`AgentClient` implements it). */
export interface ChunkFetcher {
  /** Where the pull reports resumes and restarts. Default: nowhere. */
  readonly logger?: AgentLogger;
  /** One `client:get_blob`, checked (`readChunk` in client.ts); a flat error thrown typed. */
  fetchChunk(computer: string, handle: string, req: ChunkRequest): Promise<BlobChunk>;
  /**
   * Resolves once our socket is connected and joined and `computer` is in the office again
   * (asking the Server for the office list first, so a stale view cannot mislead the wait).
   */
  waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;
  /** The path every pull to `computer` through this connection shares; else one per pull. */
  pathTo?(computer: string): ComputerPath;
  /** Takes back a chunk's bytes once the pull copied them where they go (they may be reused). */
  releaseChunk?(bytes: Buffer): void;
}

/** `len` bytes from `offset`; `first` for the request that learns a read's size (D42). */
export interface ChunkWork {
  offset: number;
  len: number;
  first?: boolean;
}

/** A pull as the path sees it. */
export interface PathFlow {
  readonly handle: string;
  readonly binary: boolean;
  /** Content-codings its requests accept (D63); undefined: none asked. */
  readonly codings: readonly ContentCoding[] | undefined;
  readonly signal: AbortSignal;
  /** The most requests this pull keeps in flight (`window`). */
  readonly window: number;
  /** The largest chunk this pull asks (its `chunkBytes`, or what the Computer clamped to). */
  readonly chunkCeiling: number;
  /** A fixed deadline per chunk (the pull's `timeoutMs`), instead of one from the round trips. */
  readonly timeoutMs: number | undefined;
  /** The next request, at most `maxLen` bytes, or undefined when the pull has none to send now. */
  nextWork(maxLen: number): ChunkWork | undefined;
  answered(work: ChunkWork, chunk: BlobChunk): void;
  failed(work: ChunkWork, err: unknown): void;
}

/** What a failed chunk request means for the pull (D43). */
export type FailureKind =
  | "busy" // the Server or the Computer has too much for us now: slow down, ask again
  | "timeout" // no answer in time (ours, or the Server's relay timeout): slow down, ask again
  | "gone" // the Computer or our socket went away: wait for it, resume
  | "retry" // another 500: ask again after a backoff, a bounded number of times
  | "final"; // anything else: the pull fails with it

export function failureKind(err: unknown): FailureKind {
  if (err instanceof ServerError) return err.reason === "busy" ? "busy" : "retry";
  if (err instanceof RequestTimeoutError || err instanceof RelayTimeoutError) return "timeout";
  if (err instanceof DisconnectedError || err instanceof ComputerNotFoundError) return "gone";
  return "final";
}

/** What a pull saw of its path: its requests, their answers and failures, and its pace. */
export interface PullStats {
  /** `client:get_blob` requests sent. */
  requests: number;
  /** Decoded bytes received in answers, every read included (more than the blob on a restart). */
  bytesReceived: number;
  /**
   * Bytes of `blob` in those answers as they travelled (base64 characters, or the binary
   * attachment's bytes, coded when a coding was applied): over `bytesReceived`, the wire bytes
   * per payload byte, envelopes and framing aside.
   */
  wireBytes: number;
  /**
   * Answers by the content-coding they came in (D63): `br`, `gzip`, `deflate`, `identity`
   * (also for a Computer that ignored the request's `content_encoding`, or when none was asked).
   */
  codings: Record<string, number>;
  /** Requests answered `busy` (each slowed the pull and was asked again). */
  busy: number;
  /** Requests not answered in time, here or at the Server's relay (each asked again). */
  timeouts: number;
  /** Resumes after the Computer or our socket went away. */
  resumes: number;
  /** Reads restarted from offset 0 (drift, mismatch, range). */
  restarts: number;
  /** The blob's bytes over the pull's duration, bytes a second (0 from the cache). */
  rate: number;
  /** The path's smoothed round trip of a chunk at the end, ms (0 from the cache). */
  rttMs: number;
  /** The pull's duration, ms. */
  elapsedMs: number;
  /** The bytes came from the local cache. */
  fromCache: boolean;
  /** Bytes a resume found verified in the partial file (not pulled again; 0 otherwise). */
  resumedFrom: number;
}

/** A request in flight. */
interface Sent {
  flow: FlowState;
  work: ChunkWork;
  ticket: SendTicket;
  /** Declared late by the path: its answer, if it still comes, is dropped. */
  expired: boolean;
}

interface FlowState {
  flow: PathFlow;
  inflight: number;
  /** Bytes asked so far: the flow with the fewest goes next (fair in bytes, not requests). */
  asked: number;
}

export interface PathOptions {
  /** The queue delay (ms) the path's pulls may add above its base round trip. Default 100. */
  targetDelayMs?: number;
}

/** The path to one Computer through one client; see the file's comment. */
export class ComputerPath {
  /** Every decision of the path: budget, chunk size, deadlines. */
  readonly controller: PathController;
  private readonly flows: FlowState[] = [];
  /** Round-robin position among the flows with equal `asked` bytes. */
  private turn = 0;
  /** Requests the controller judges the deadline of, by their ticket. */
  private readonly timed = new Map<SendTicket, Sent>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** A wake-up at the controller's pace, when that and not an answer holds the next request. */
  private paceTimer: ReturnType<typeof setTimeout> | undefined;
  private waking = false;

  constructor(
    private readonly fetcher: ChunkFetcher,
    private readonly computer: string,
    opts: PathOptions = {},
  ) {
    this.controller = new PathController(opts);
  }

  /** Forgets every estimate (the Computer or our socket went away): measure afresh. */
  reset(): void {
    this.controller.reset();
  }

  /** The delivery rate, in bytes a second (0 before the first answer). */
  get rate(): number {
    return this.controller.rate;
  }

  /** The smoothed round trip of a chunk, in ms (0 before the first answer). */
  get rtt(): number {
    return this.controller.rttMs;
  }

  /** The base round trip, in ms: the least seen lately, less the chunk's own transmission. */
  get baseRtt(): number {
    return this.controller.baseRttMs;
  }

  /** The chunk size the path asks now (before a pull's own ceiling). */
  get chunkBytes(): number {
    return this.controller.chunkBytes();
  }

  /** The bytes the pulls may keep in flight now. */
  get budgetBytes(): number {
    return this.controller.budgetBytes;
  }

  /** What the path's controller is doing (startup, steady, probing, backed-off). */
  get state(): PathState {
    return this.controller.state;
  }

  /**
   * The deadline of a chunk request that is not a read's first (D41), counted from when it
   * became the oldest in flight; undefined (the client's request timeout) until a round trip was
   * measured.
   */
  get chunkDeadlineMs(): number | undefined {
    return this.controller.deadlineMs;
  }

  /** Starts sending `flow`'s requests in turn with the others. */
  add(flow: PathFlow): void {
    const asked = this.flows.length > 0 ? Math.min(...this.flows.map((f) => f.asked)) : 0;
    this.flows.push({ flow, inflight: 0, asked });
    this.wake();
  }

  /** Stops asking `flow` for requests (its answers still in flight are still delivered). */
  remove(flow: PathFlow): void {
    const i = this.flows.findIndex((f) => f.flow === flow);
    if (i >= 0) this.flows.splice(i, 1);
    this.wake();
  }

  /** Sends what the budget allows, flow by flow. Call after anything that may free a request. */
  wake(): void {
    if (this.waking) return;
    this.waking = true;
    try {
      this.sendWhileRoom();
    } finally {
      this.waking = false;
    }
  }

  private sendWhileRoom(): void {
    if (this.flows.length === 0) return;
    const ctl = this.controller;
    const now = performance.now();
    // The chunk the flows ask: the path's, or less where every flow's ceiling is lower.
    const most = this.ceilings();
    ctl.setLimit(most.bytes, most.window);
    const chunk = ctl.chunkBytes(most.chunk);
    const idle = new Set<FlowState>();
    let waiting = false;
    while (idle.size < this.flows.length) {
      const f = this.nextFlow(idle);
      if (!f) break;
      // A request goes out only when all of it fits the budget.
      const len = Math.max(1, Math.min(chunk, f.flow.chunkCeiling));
      if (!ctl.maySend(now, len)) {
        waiting = true;
        break;
      }
      const work = f.flow.nextWork(len);
      if (!work) {
        idle.add(f);
        continue;
      }
      this.send(now, f, work);
    }
    // Budget left and nobody to use it: samples from now on say less than the path can do.
    if (!waiting) ctl.onAppLimited();
    else if (ctl.sendAtMs > now && !this.paceTimer) {
      this.paceTimer = setTimeout(() => {
        this.paceTimer = undefined;
        this.wake();
      }, ctl.sendAtMs - now);
      this.paceTimer.unref?.();
    }
  }

  /** The flow that asked the fewest bytes among those that may send (ties in turn). */
  private nextFlow(skip: Set<FlowState>): FlowState | undefined {
    let best: FlowState | undefined;
    const n = this.flows.length;
    for (let k = 0; k < n; k++) {
      const f = this.flows[(this.turn + k) % n]!;
      if (skip.has(f) || f.inflight >= f.flow.window) continue;
      if (!best || f.asked < best.asked) best = f;
    }
    if (best) this.turn = (this.flows.indexOf(best) + 1) % n;
    return best;
  }

  /** The flows' largest window × chunk (the most the budget may hold), window and chunk. */
  private ceilings(): { bytes: number; window: number; chunk: number } {
    const most = { bytes: 0, window: 0, chunk: 0 };
    for (const { flow } of this.flows) {
      most.bytes = Math.max(most.bytes, flow.window * flow.chunkCeiling);
      most.window = Math.max(most.window, flow.window);
      most.chunk = Math.max(most.chunk, flow.chunkCeiling);
    }
    return most;
  }

  private send(now: number, f: FlowState, work: ChunkWork): void {
    const flow = f.flow;
    const first = work.first === true;
    // A fixed `timeoutMs` is the client's to enforce; else the path judges the deadline (from
    // when the request is the oldest in flight) and the client's wait is only a backstop.
    const own = flow.timeoutMs === undefined && !first;
    const ticket = this.controller.onSend(now, work.len, { first, timed: own });
    const s: Sent = { flow: f, work, ticket, expired: false };
    f.inflight++;
    // Shares are counted in what a chunk costs the link: base64 carries 4/3 of its bytes.
    f.asked += flow.binary ? work.len : (work.len * 4) / 3;
    const deadline = this.controller.deadlineMs;
    const timeoutMs =
      flow.timeoutMs ?? (own && deadline !== undefined ? MAX_CHUNK_DEADLINE_MS : undefined);
    if (own) {
      this.timed.set(ticket, s);
      this.arm();
    }
    const req: ChunkRequest = {
      offset: work.offset,
      maxChunkBytes: work.len,
      binary: flow.binary,
      ...(flow.codings ? { codings: flow.codings } : {}),
      signal: flow.signal,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    };
    this.fetcher.fetchChunk(this.computer, flow.handle, req).then(
      (chunk) => {
        if (!this.settled(s)) return this.fetcher.releaseChunk?.(chunk.bytes);
        // A content-coding's bytes as sent (base64 carries 4/3 of them) widen the least chunk.
        const coded = chunk.carriage === "binary" ? chunk.wireBytes : (chunk.wireBytes * 3) / 4;
        this.controller.onAnswer(performance.now(), ticket, chunk.bytes.length, coded);
        flow.answered(work, chunk);
        this.wake();
      },
      (err: unknown) => {
        if (!this.settled(s)) return;
        const at = performance.now();
        const kind = failureKind(err);
        if (kind === "busy") this.controller.onBusy(at, ticket);
        else if (kind === "timeout") this.controller.onTimeout(at, ticket);
        else this.controller.onAbandon(at, ticket);
        flow.failed(work, err);
        this.wake();
      },
    );
  }

  /** Whether `s` was still the path's to settle (not declared late before). */
  private settled(s: Sent): boolean {
    if (s.expired) return false;
    s.expired = true;
    s.flow.inflight--;
    this.timed.delete(s.ticket);
    return true;
  }

  /** One timer at the oldest timed request's deadline (it moves later as answers arrive). */
  private arm(): void {
    const at = this.controller.nextDeadlineAt();
    if (at === undefined || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()));
    this.timer.unref?.();
  }

  /** Declares late every request the controller says is, and asks their flows again. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (let t = this.controller.late(now); t; t = this.controller.late(now)) {
      const s = this.timed.get(t);
      const ms = this.controller.deadlineMs ?? MAX_CHUNK_DEADLINE_MS;
      this.controller.onTimeout(now, t);
      if (!s || !this.settled(s)) continue;
      s.flow.flow.failed(s.work, new RequestTimeoutError("client:get_blob", Math.round(ms)));
    }
    if (this.timed.size > 0) this.arm();
    this.wake();
  }
}

// ---------------------------------------------------------------------------------------------
// What a pull holds its requests and answers to

/**
 * The default minimum progress: a pull that moved less than 1 KiB a second, averaged over 60 s,
 * ends. An honest 1 Mbit/s path moves 122 KiB a second, over a hundred times that, so the rule
 * never trips on it even shared by a hundred pulls; a Computer that keeps a pull below it is
 * ended within 66 s (the window and one of its tenths), inside the 2 minutes we promise.
 */
export const DEFAULT_SPEED_LIMIT = 1024;
export const DEFAULT_SPEED_TIME_MS = 60_000;

/** Bytes a second over a sliding window of `timeMs`, counted in tenths of it. */
export class SpeedGuard {
  private readonly slot: number;
  private readonly bins: number[] = new Array<number>(10).fill(0);
  private binAt = 0;
  /** When the window started filling (the first answer, or the end of a resume wait). */
  private since: number | undefined;

  constructor(
    readonly limit: number,
    readonly timeMs: number,
  ) {
    this.slot = timeMs / 10;
  }

  /** Starts (again) measuring at `now`: the first answer, or a Computer back after a wait. */
  start(now: number): void {
    this.bins.fill(0);
    this.since = now;
    this.binAt = Math.floor(now / this.slot);
  }

  /** Stops measuring (while the pull waits for its Computer to come back). */
  pause(): void {
    this.since = undefined;
  }

  add(bytes: number, now: number): void {
    if (this.since === undefined) return;
    this.roll(now);
    this.bins[this.binAt % 10]! += bytes;
  }

  /** A `TooSlowError` when a whole window has passed with less than `limit` a second. */
  check(now: number): TooSlowError | undefined {
    if (this.since === undefined || this.limit <= 0 || now - this.since < this.timeMs) return;
    this.roll(now);
    const moved = this.bins.reduce((a, b) => a + b, 0);
    const seconds = this.timeMs / 1000;
    if (moved >= this.limit * seconds) return;
    return new TooSlowError(
      `the pull moved ${moved} bytes in ${seconds} s, less than the minimum ${this.limit} bytes a second`,
      "speed",
    );
  }

  private roll(now: number): void {
    const bin = Math.floor(now / this.slot);
    for (let b = this.binAt + 1; b <= Math.min(bin, this.binAt + 10); b++) this.bins[b % 10] = 0;
    this.binAt = Math.max(this.binAt, bin);
  }
}

/**
 * A pull's minimum progress rule from its options: a pull capped below its minimum would end for
 * keeping to its cap, so the minimum is half the slowest cap at most.
 */
export function minimumProgress(
  o: { speedLimit?: number; speedTimeMs?: number },
  gate: RateGate,
): SpeedGuard {
  const limit = o.speedLimit ?? DEFAULT_SPEED_LIMIT;
  const cap = gate.rate;
  return new SpeedGuard(
    cap !== undefined ? Math.min(limit, cap / 2) : limit,
    o.speedTimeMs ?? DEFAULT_SPEED_TIME_MS,
  );
}

/**
 * No Computer of ours clamps below its buffer bound (about 730 KiB), and the spec sets no floor;
 * an answer under 1 KiB without `eof` is never a useful clamp.
 */
export const MIN_CLAMP_BYTES = 1024;
/** An answer this many times shorter than its Computer's own ceiling is a sliver. */
const SLIVER_RATIO = 4;
/** Slivers in a row after which the Computer is judged to break the contract. */
export const SLIVER_LIMIT = 16;

/**
 * Judges the length of each answer (D16, D87). A short answer without `eof` that is the
 * Computer's first is its chunk ceiling (an honest clamp), and the pull asks no more from then on;
 * one under `MIN_CLAMP_BYTES`, or a quarter of its own ceiling, is a sliver. `SLIVER_LIMIT`
 * slivers in a row are a `ChunkContractError`: an honest Computer answers `min(asked, its cap)`.
 */
export class AnswerJudge {
  /** The Computer's ceiling, once an answer showed one. */
  ceiling: number | undefined;
  private slivers = 0;
  private sliverMax = 0;

  /** The ceiling to use from now on, or undefined when it stays; throws on too many slivers. */
  judge(offset: number, asked: number, len: number, eof: boolean): number | undefined {
    if (eof || len >= asked) {
      this.slivers = 0;
      return undefined;
    }
    const own = this.ceiling;
    if (len < MIN_CLAMP_BYTES || (own !== undefined && len * SLIVER_RATIO < Math.min(asked, own))) {
      this.sliverMax = this.slivers === 0 ? len : Math.max(this.sliverMax, len);
      if (++this.slivers >= SLIVER_LIMIT) {
        const stated = own !== undefined ? `, its own ceiling ${own}` : "";
        throw new ChunkContractError(
          offset,
          `the Computer keeps answering far less than asked without eof ` +
            `(${this.slivers} answers in a row of at most ${this.sliverMax} ` +
            `byte${this.sliverMax === 1 ? "" : "s"}${stated})`,
        );
      }
      return undefined;
    }
    this.slivers = 0;
    this.ceiling = Math.min(own ?? len, len);
    return this.ceiling;
  }
}

/** The rate caps a pull's requests wait for: the client's shared one and the pull's own. */
export class RateGate {
  private readonly limits: RateLimit[];

  constructor(...limits: (RateLimit | undefined)[]) {
    this.limits = limits.filter((l): l is RateLimit => l !== undefined);
  }

  get active(): boolean {
    return this.limits.length > 0;
  }

  /** The slowest cap, bytes a second, or undefined without a cap. */
  get rate(): number | undefined {
    return this.active ? Math.min(...this.limits.map((l) => l.bytesPerSecond)) : undefined;
  }

  /** The chunk size that keeps the slowest cap smooth, or undefined without a cap. */
  get chunkBytes(): number | undefined {
    return this.active ? Math.min(...this.limits.map((l) => l.chunkBytes)) : undefined;
  }

  /** Ms until a request may go (0: now). */
  wait(now: number): number {
    return Math.max(0, ...this.limits.map((l) => l.wait(now)));
  }

  /** Charges `bytes` for a request sent now. */
  take(bytes: number, now: number): void {
    for (const l of this.limits) l.take(bytes, now);
  }

  /** Gives back what a request was charged beyond what its answer carried (or all of it). */
  settle(bytes: number): void {
    if (bytes !== 0) for (const l of this.limits) l.settle(bytes);
  }
}
