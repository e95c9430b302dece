/**
 * The path from one `AgentClient` to one Computer, as its pulls see it (docs/protocol.md §6.9;
 * D40–D43): how fast it delivers, how long it takes without a queue, and from those how many
 * bytes the pulls keep in flight, how big a chunk is, and how long a chunk may take. Every pull
 * to that Computer through that client sends its requests through here, in turn, so pulls share
 * one budget evenly whatever their carriage, and together never queue more than about the target
 * delay of bytes in front of the client's other requests to that Computer.
 *
 * The estimates, after TCP BBR (delivery rate, minimum round trip) and LEDBAT (a target for the
 * queue delay a bulk transfer may add, RFC 6817):
 * - rate: the largest delivery-rate sample of the last `RATE_WINDOW_MS` (bytes answered between a
 *   request's send and its answer over the time between, as BBR computes it);
 * - base round trip: the least round trip seen, less the chunk's own transmission at that rate;
 * - queue delay: a chunk's round trip less the base, the least of the last few (a single late
 *   answer is not a queue): what a small request sent with that chunk would have waited.
 * The budget starts at two small chunks and grows by every answered byte (doubling each round
 * trip) until one answer's queue delay reaches the target; from then on it moves toward the
 * target in proportion to how far off it is (at most half the way in a round trip), never beyond
 * twice `rate × (base + target)`. A `busy` answer or a lost answer halves it (at most once a round
 * trip). A chunk is what the rate moves in half the target, and a request goes out only when all
 * of it fits the budget: about two chunks are in flight at low rates, the target's worth of
 * bytes at any rate.
 */
import {
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  ComputerNotFoundError,
  DisconnectedError,
} from "./errors.ts";
import type { ContentCoding } from "@a2c-smcp/protocol";
import type { AgentLogger } from "./logger.ts";

/** The queue delay (ms) the pulls of one path may add above its base round trip (D40). */
export const DEFAULT_TARGET_DELAY_MS = 100;
/** The first chunk of a path that has no estimate yet (a fresh client, or after a reconnect). */
export const INITIAL_CHUNK_BYTES = 16 * 1024;
/** The smallest chunk the path asks: below it, a request's envelope costs more than it carries. */
export const MIN_CHUNK_BYTES = 4 * 1024;
/** How long a delivery-rate sample counts toward the rate (a max filter, as BBR's). */
export const RATE_WINDOW_MS = 2000;
/** A chunk's deadline never goes below this, whatever the round trips (D41). */
export const MIN_CHUNK_DEADLINE_MS = 2000;
/** ... nor, backed off after lost answers, above this. */
export const MAX_CHUNK_DEADLINE_MS = 60_000;
/** Chunk sizes are multiples of this. */
const PAGE = 4096;
/** How much of its distance to the target the budget moves in one round trip. */
const GAIN = 0.5;
/** Queue-delay samples of which the least is taken (LEDBAT's "current delay" filter). */
const DELAY_SAMPLES = 4;

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

/** A request in flight, with what BBR keeps to compute a delivery-rate sample from its answer. */
interface Sent {
  flow: FlowState;
  work: ChunkWork;
  at: number;
  /** The path's delivered bytes, the time of the last delivery, and that delivery's send time. */
  delivered: number;
  deliveredAt: number;
  firstSentAt: number;
  appLimited: boolean;
}

interface FlowState {
  flow: PathFlow;
  inflight: number;
  /** Bytes asked so far: the flow with the fewest goes next (fair in bytes, not requests). */
  asked: number;
}

/** The least round trip seen for chunks of about one size (a power of two). */
interface RttFloor {
  rtt: number;
  len: number;
}

export interface PathOptions {
  /** The queue delay (ms) the path's pulls may add above its base round trip. Default 100. */
  targetDelayMs?: number;
}

/** The path to one Computer through one client; see the file's comment. */
export class ComputerPath {
  private readonly target: number;
  private readonly flows: FlowState[] = [];
  /** Round-robin position among the flows with equal `asked` bytes. */
  private turn = 0;
  private inflightBytes = 0;
  private budget = 0;
  private slowStart = true;
  /** Rate samples (time, bytes/ms), decreasing in value: the first is the window's max. */
  private rates: { at: number; rate: number }[] = [];
  private floors = new Map<number, RttFloor>();
  private srtt = 0;
  private rttvar = 0;
  private delays: number[] = [];
  private backoff = 1;
  private lastDecrease = Number.NEGATIVE_INFINITY;
  private delivered = 0;
  private deliveredAt = 0;
  private firstSentAt = 0;
  /** Non-zero while samples are app-limited: the delivered count that ends it. */
  private appLimitedUntil = 0;
  private waking = false;

  constructor(
    private readonly fetcher: ChunkFetcher,
    private readonly computer: string,
    opts: PathOptions = {},
  ) {
    this.target = Math.max(1, opts.targetDelayMs ?? DEFAULT_TARGET_DELAY_MS);
    this.reset();
  }

  /** Forgets every estimate (the Computer or our socket went away): measure afresh. */
  reset(): void {
    this.rates = [];
    this.floors = new Map();
    this.srtt = 0;
    this.rttvar = 0;
    this.delays = [];
    this.backoff = 1;
    this.slowStart = true;
    this.budget = 2 * INITIAL_CHUNK_BYTES;
  }

  /** The delivery rate, in bytes a second (0 before the first answer). */
  get rate(): number {
    return (this.rates[0]?.rate ?? 0) * 1000;
  }

  /** The smoothed round trip of a chunk, in ms (0 before the first answer). */
  get rtt(): number {
    return this.srtt;
  }

  /** The base round trip, in ms: the least seen, less the chunk's own transmission. */
  get baseRtt(): number {
    const r = this.rates[0]?.rate ?? 0;
    let base = Number.POSITIVE_INFINITY;
    for (const f of this.floors.values()) base = Math.min(base, f.rtt - (r > 0 ? f.len / r : 0));
    return Number.isFinite(base) ? Math.max(0, base) : 0;
  }

  /** The chunk size the path asks now (before a pull's own ceiling). */
  get chunkBytes(): number {
    const r = this.rates[0]?.rate ?? 0;
    if (r === 0) return INITIAL_CHUNK_BYTES;
    // What the rate moves in half the target, in whole 4 KiB pages: two chunks in flight are
    // the target's queue, and the next request travels while one is answered.
    const ideal = (r * this.target) / 2;
    return Math.max(MIN_CHUNK_BYTES, Math.round(ideal / PAGE) * PAGE);
  }

  /** The bytes the pulls may keep in flight now. */
  get budgetBytes(): number {
    return this.budget;
  }

  /**
   * The deadline of a chunk request that is not a read's first (D41); undefined (the client's
   * request timeout) until a round trip was measured.
   */
  get chunkDeadlineMs(): number | undefined {
    if (this.srtt === 0) return undefined;
    const rto = 2 * this.srtt + 4 * this.rttvar;
    return Math.min(MAX_CHUNK_DEADLINE_MS, Math.max(MIN_CHUNK_DEADLINE_MS, rto) * this.backoff);
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
    // The chunk the flows ask: the path's, or less where every flow's ceiling is lower.
    const chunk = Math.min(
      this.chunkBytes,
      Math.max(...this.flows.map((f) => f.flow.chunkCeiling)),
    );
    this.budget = Math.min(Math.max(this.budget, 2 * chunk), this.ceiling(chunk));
    const idle = new Set<FlowState>();
    let waiting = false;
    while (idle.size < this.flows.length) {
      const f = this.nextFlow(idle);
      if (!f) break;
      // A request goes out only when all of it fits the budget (at least two chunks, so the
      // next request is always on its way while one is answered).
      const len = Math.max(1, Math.min(chunk, f.flow.chunkCeiling));
      if (this.inflightBytes + len > this.budget) {
        waiting = true;
        break;
      }
      const work = f.flow.nextWork(len);
      if (!work) {
        idle.add(f);
        continue;
      }
      this.send(f, work);
    }
    // Budget left and nobody to use it: samples from now on say less than the path can do.
    if (!waiting) this.appLimitedUntil = this.delivered + this.inflightBytes || 1;
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

  /** The most the budget may hold: the largest window × chunk of the flows. */
  private ceiling(chunk: number): number {
    let most = 2 * chunk;
    for (const f of this.flows) most = Math.max(most, f.flow.window * f.flow.chunkCeiling);
    return most;
  }

  private send(f: FlowState, work: ChunkWork): void {
    const flow = f.flow;
    const now = performance.now();
    if (this.inflightBytes === 0) {
      this.deliveredAt = now;
      this.firstSentAt = now;
    }
    const s: Sent = {
      flow: f,
      work,
      at: now,
      delivered: this.delivered,
      deliveredAt: this.deliveredAt,
      firstSentAt: this.firstSentAt,
      appLimited: this.appLimitedUntil !== 0,
    };
    this.inflightBytes += work.len;
    f.inflight++;
    // Shares are counted in what a chunk costs the link: base64 carries 4/3 of its bytes.
    f.asked += flow.binary ? work.len : (work.len * 4) / 3;
    const timeoutMs = flow.timeoutMs ?? (work.first ? undefined : this.chunkDeadlineMs);
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
        this.settled(s);
        this.answered(s, chunk.bytes.length);
        flow.answered(work, chunk);
        this.wake();
      },
      (err: unknown) => {
        this.settled(s);
        this.failed(s, err);
        flow.failed(work, err);
        this.wake();
      },
    );
  }

  private settled(s: Sent): void {
    this.inflightBytes -= s.work.len;
    s.flow.inflight--;
  }

  /** Updates the estimates and the budget from one answer of `bytes`. */
  private answered(s: Sent, bytes: number): void {
    const now = performance.now();
    const rtt = now - s.at;
    this.delivered += bytes;
    this.deliveredAt = now;
    this.firstSentAt = s.at;
    if (this.appLimitedUntil !== 0 && this.delivered > this.appLimitedUntil) {
      this.appLimitedUntil = 0;
    }
    this.backoff = 1;
    // BBR's delivery rate: bytes delivered while this request was out, over the longer of the
    // send and the answer intervals (a burst of answers read at once must not inflate it).
    const interval = Math.max(s.at - s.firstSentAt, now - s.deliveredAt);
    if (interval > 0 && bytes > 0) {
      const sample = (this.delivered - s.delivered) / interval;
      if (!s.appLimited || sample > (this.rates[0]?.rate ?? 0)) this.addRate(now, sample);
    }
    this.expireRates(now);
    if (bytes > 0) this.addFloor(rtt, bytes);
    // A read's first answer may have waited for the Computer to hash the file: its round trip
    // says nothing about the queue.
    if (s.work.first) return;
    this.addRtt(rtt);
    // What this chunk waited behind, its own transmission included: the delay a small request
    // sent with it would have seen.
    const queued = Math.max(0, rtt - this.baseRtt);
    this.delays.push(queued);
    if (this.delays.length > DELAY_SAMPLES) this.delays.shift();
    const delay = Math.min(...this.delays);
    if (this.slowStart) {
      // Out at the first answer that queued a target's worth: the budget doubles each round
      // trip, so waiting for a filtered delay would leave twice the queue behind.
      if (queued < this.target) this.budget += bytes;
      else {
        this.slowStart = false;
        this.budget = this.steadyBudget();
      }
    } else if (!s.appLimited || delay > this.target) {
      const off = Math.max(-1, Math.min(1, (this.target - delay) / this.target));
      this.budget += GAIN * off * bytes;
      // Twice the target's queue at most: room enough that clients of other Computers sharing
      // a link fill it and TCP splits it evenly between their connections (capped at one
      // target's worth, each kept the split it started with: 18/82 at 20 Mbit/s).
      this.budget = Math.min(this.budget, 2 * this.steadyBudget());
    }
  }

  private failed(s: Sent, err: unknown): void {
    const kind = failureKind(err);
    if (kind !== "busy" && kind !== "timeout") return;
    if (kind === "timeout") this.backoff = Math.min(this.backoff * 2, 32);
    // One decrease per round trip: the busy answers or losses of one window are one event.
    const now = performance.now();
    if (now - this.lastDecrease < Math.max(this.srtt, 1)) return;
    this.lastDecrease = now;
    this.slowStart = false;
    this.budget = Math.max(2 * this.chunkBytes, this.budget / 2);
  }

  /** `rate × (base + target)`: the bytes that keep the path full with the target's queue. */
  private steadyBudget(): number {
    return (this.rates[0]?.rate ?? 0) * (this.baseRtt + this.target);
  }

  private addRate(at: number, rate: number): void {
    // A monotonic deque: a new sample evicts every older one it beats.
    const q = this.rates;
    while (q.length > 0 && q[q.length - 1]!.rate <= rate) q.pop();
    q.push({ at, rate });
  }

  private expireRates(now: number): void {
    const q = this.rates;
    while (q.length > 1 && q[0]!.at < now - RATE_WINDOW_MS) q.shift();
  }

  private addFloor(rtt: number, len: number): void {
    const key = Math.round(Math.log2(len));
    const f = this.floors.get(key);
    if (!f || rtt < f.rtt) this.floors.set(key, { rtt, len });
  }

  /** RFC 6298's smoothed round trip and its variation. */
  private addRtt(rtt: number): void {
    if (this.srtt === 0) {
      this.srtt = rtt;
      this.rttvar = rtt / 2;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - rtt);
      this.srtt = 0.875 * this.srtt + 0.125 * rtt;
    }
  }
}
