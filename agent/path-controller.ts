/**
 * The path controller (docs/protocol.md §6.9; D99..4): how many bytes one path keeps in flight,
 * how big a chunk is, and when a chunk is late, for a bulk transfer in either direction. It is
 * passive and deterministic: no I/O, no timer, no clock. The scheduler that owns it (agent/path.ts
 * for pulls, the upload's sender for `client:put_blob`) passes the time (ms, any monotonic origin)
 * on every call and reports each request: `onSend` when it leaves, then exactly one of `onAnswer`
 * (the answer or ack arrived with `bytes` of payload), `onBusy`, `onTimeout` or `onAbandon` (it
 * ended saying nothing of the path). Same calls, same decisions: tests run it on a simulated link.
 *
 * Estimators after TCP BBR and LEDBAT (RFC 6817): the delivery rate (a max filter), the base round
 * trip (the least of this probe period and the last, less the chunk's own transmission), the queue
 * delay (the second least of the last four readings), the bottleneck's rate (packet pairs, D127).
 * The law, by state (each step's reason is in its decision):
 * - `startup`: the budget grows 1.5× every answered byte until the queue shows (LEDBAT++'s exit),
 *   never past what the bottleneck moves in the base round trip and the target; an end the next
 *   round trips contradict (a sender's own pace read as queue) brings it back once (D130, D134).
 * - `steady`: multiplicative growth far under the target (not past the path's product and the
 *   target once the pipe is full, D120), a step a round trip near it that is the same for every
 *   flow (D127), a cut in proportion over it; a slower link followed at once (D110), a pause
 *   undone (D117, D121).
 * - `probing`: every `PROBE_INTERVAL_MS`, about a round trip at the path's product (D100).
 * - `backed-off`: a `busy` or late answer halves the budget, once a round trip.
 * Requests leave paced a round trip after an idle one (D126, D132), on a long path always (D131).
 * Chunks are sized by the rate and the budget, never under what carries 8 KiB on the wire (D122,
 * D123, D125, D128); a request's deadline (D41, D101) counts from when it is the oldest in flight.
 */

import type { PathControllerOptions, PathState, SendOptions, SendTicket } from "./path-types.ts";

export type { PathControllerOptions, PathState, SendOptions, SendTicket } from "./path-types.ts";

/** The queue delay (ms) a path's transfers may add above its base round trip (D40). */
export const DEFAULT_TARGET_DELAY_MS = 60;
/** The first chunk of a path that has no estimate yet (a fresh client, or after a reconnect). */
export const INITIAL_CHUNK_BYTES = 16 * 1024;
/** The smallest chunk the path asks: below it, a request's envelope costs more than it carries. */
export const MIN_CHUNK_BYTES = 8 * 1024;
/** How long a delivery-rate sample counts toward the rate at least (a max filter, as BBR's). */
export const RATE_WINDOW_MS = 2000;
/** A chunk's deadline never goes below this, whatever the round trips (D41). */
export const MIN_CHUNK_DEADLINE_MS = 2000;
/** ... nor, backed off after lost answers, above this. */
export const MAX_CHUNK_DEADLINE_MS = 60_000;
/** How often a path slows down to see the empty queue (BBR's ProbeRTT period). */
export const PROBE_INTERVAL_MS = 5000;
/** The least a slowdown lasts once the bytes in flight fit it. */
export const PROBE_MIN_MS = 200;
/** A chunk's least share of the budget in startup and after it (D125; a window of 16 carries it). */
const [STARTUP_CHUNKS, BUDGET_CHUNKS] = [6, 12];
/** Chunks are multiples of `PAGE`; the queue delay is read over `DELAY_SAMPLES` (LEDBAT's filter). */
const [PAGE, DELAY_SAMPLES] = [4096, 4];
/**
 * The share of the target the queue ahead of a chunk may take; a cut for the queue delay aims at
 * `CUT` of that, and goes at most to `MIN_CUT` in a round trip (a link that slowed: below).
 */
const [QUEUE_SHARE, CUT, MIN_CUT] = [0.75, 0.8, 0.7];
/** The budget's growth per answered byte: startup's (×2.5 a round trip), far under the target's. */
const [STARTUP_GAIN, FAR_UNDER_GAIN] = [1.5, 0.5];
/** The budget's additive increase a round trip under the target, the same for every flow. */
const STEP_BYTES = INITIAL_CHUNK_BYTES;
/** Requests' pace (× the budget a round trip): after idle, as BBR's restart; on a long path (D131). */
const [RESTART_PACE_GAIN, LONG_PATH_PACE_GAIN, LONG_PATH_TARGETS] = [1.25, 2, 4];
/**
 * Rate samples are kept for at least `RATE_WINDOW_RTTS` base round trips; the pipe is full after
 * `PIPE_FULL_ROUNDS` whose rate grew by less than a quarter (BBR's); startup's end was spurious if
 * the rate grew by a quarter in `CSS_GREW` of the next `CSS_ROUNDS` (HyStart++'s), or in one while
 * the bottleneck's measure grew `CSS_PAIR_GAIN` times (D134).
 */
const [RATE_WINDOW_RTTS, PIPE_FULL_ROUNDS, CSS_ROUNDS, CSS_GREW, CSS_PAIR_GAIN] = [4, 3, 5, 3, 2];

/** The least round trip (ms) of chunks of about `len` bytes, and the link's rate then (B/ms). */
type Floor = { rtt: number; len: number; rate: number };

/** Chunk sizes within a quarter octave share their round-trip floor. */
function sizeClass(len: number): number {
  return Math.round(4 * Math.log2(Math.max(1, len)));
}

/** The largest sample of a time window (a monotonic deque: a sample evicts the older it beats). */
class MaxFilter {
  constructor(private q: { at: number; v: number }[] = []) {}
  get value(): number {
    return this.q[0]?.v ?? 0;
  }
  add(at: number, v: number): void {
    const q = this.q;
    while (q.length > 0 && q[q.length - 1]!.v <= v) q.pop();
    q.push({ at, v });
  }
  /** Drops samples older than `window` before `now`, keeping the latest. */
  expire(now: number, window: number): void {
    while (this.q.length > 1 && this.q[0]!.at < now - window) this.q.shift();
  }
}

/** The passive path controller; see the file's comment. */
export class PathController {
  readonly targetMs: number;
  private mode: PathState = "startup";
  private budget = 2 * INITIAL_CHUNK_BYTES;
  /** The most the scheduler could keep in flight (windows × chunk ceilings); none from the rate. */
  private limit = Number.POSITIVE_INFINITY;
  /** The requests the scheduler may keep in flight (a pull's 16 until `setLimit` says). */
  private window = 16;
  private inflight = 0;
  /** Delivery-rate samples (bytes/ms), BBR's. */
  private rates = new MaxFilter();
  /**
   * The rate answers arrive at (bytes over the time since the request's send saw the last answer),
   * an upper bound of the link's: a low delivery rate (the budget's limit) never reads as queue.
   */
  private acks = new MaxFilter();
  /** Packet pairs of the last 10 s (bytes/ms): the bottleneck's rate (D127). */
  private pairs: { at: number; v: number }[] = [];
  private lastAck = 0;
  /** The last answer that sampled the path (not a read's first, nor one a pause held; D132). */
  private lastAnswerAt = 0;
  /** A "link slowed" verdict until the next answer confirms it: when, and what it replaced. */
  private slowed: { at: number; rates: MaxFilter; budget: number } | undefined;
  /** Requests sent before this met a pause of the path: their answers are no queue samples. */
  private pausedBefore = Number.NEGATIVE_INFINITY;
  /** Requests' pace: an idle restart's until `restartUntil`; the next not before `sendAt`. */
  private pace = { restartUntil: Number.NEGATIVE_INFINITY, sendAt: Number.NEGATIVE_INFINITY };
  /** Base round-trip floors of this probe period and of the one before. */
  private floors = new Map<number, Floor>();
  private oldFloors = new Map<number, Floor>();
  private srtt = 0;
  private rttvar = 0;
  private delays: number[] = [];
  private backoff = 1;
  /** Coded bytes a payload byte of the latest answers (a content-coding's ratio; 1: none). */
  private coded = 1;
  private lastDecrease = Number.NEGATIVE_INFINITY;
  /** When the budget was last cut for the queue delay. */
  private cutAt = Number.NEGATIVE_INFINITY;
  private delivered = 0;
  private deliveredAt = 0;
  private firstSentAt = 0;
  /** BBR's round trip: the count that ends it, the rate it last grew to, rounds since, full pipe. */
  private round = { end: 0, rate: 0, flat: 0, pipeFull: false };
  /** Startup's end may yet prove spurious: rounds left, rounds the rate grew, the pairs at it. */
  private css = { left: 0, grew: 0, pair: 0 };
  /** Startup came back once after a spurious end: its next end is final (until a reset). */
  private resumed = false;
  /** Non-zero while samples are app-limited: the delivered count that ends it. */
  private appLimitedUntil = 0;
  /** Requests in flight with a deadline, oldest first. */
  private readonly timed = new Set<SendTicket>();
  /** Bumped at each slowdown and back-off: answers to older requests do not end them. */
  private epoch = 0;
  private nextProbeAt = Number.NaN;
  /** During a slowdown: the budget to come back to, and when the bytes in flight fit it. */
  private saved = 0;
  private drainedAt = Number.NaN;

  constructor(opts: PathControllerOptions = {}) {
    this.targetMs = Math.max(1, opts.targetDelayMs ?? DEFAULT_TARGET_DELAY_MS);
  }

  /** Forgets every estimate (the peer or our socket went away): measure afresh. */
  reset(): void {
    [this.rates, this.acks, this.slowed] = [new MaxFilter(), new MaxFilter(), undefined];
    [this.floors, this.oldFloors] = [new Map<number, Floor>(), new Map<number, Floor>()];
    [this.srtt, this.rttvar, this.delays, this.pairs, this.backoff] = [0, 0, [], [], 1];
    [this.coded, this.css, this.resumed] = [1, { left: 0, grew: 0, pair: 0 }, false];
    [this.mode, this.budget, this.nextProbeAt] = ["startup", 2 * INITIAL_CHUNK_BYTES, Number.NaN];
    this.round = { end: this.delivered, rate: 0, flat: 0, pipeFull: false };
    this.pace = { restartUntil: Number.NEGATIVE_INFINITY, sendAt: Number.NEGATIVE_INFINITY };
    this.epoch++;
  }

  // --- what the scheduler reads
  get state(): PathState {
    return this.mode;
  }
  /** The bytes the transfers may keep in flight now. */
  get budgetBytes(): number {
    // Two chunks of the rate's size at least; one in a slowdown (that must empty the queue).
    const least = (this.mode === "probing" ? 1 : 2) * this.rateChunk();
    return Math.min(this.limit, Math.max(this.budget, least));
  }
  /** The bytes in flight (sent, not yet answered). */
  get inflightBytes(): number {
    return this.inflight;
  }
  /** The delivery rate, in bytes a second (0 before the first answer). */
  get rate(): number {
    return this.rates.value * 1000;
  }
  /** The smoothed round trip of a chunk, in ms (0 before the first answer). */
  get rttMs(): number {
    return this.srtt;
  }
  /** The base round trip, in ms: the least seen lately, less the chunk's own transmission. */
  get baseRttMs(): number {
    const r = this.linkRate();
    let base = Number.POSITIVE_INFINITY;
    let raw = Number.POSITIVE_INFINITY;
    // Each floor less its own transmission at the larger rate of then and now (so a rate that fell
    // since never makes an old, large chunk's round trip read as a short base), at most half the
    // target (chunks are sized so) whatever a low rate estimate says.
    for (const m of [this.floors, this.oldFloors]) {
      for (const f of m.values()) {
        const at = Math.max(r, f.rate);
        raw = Math.min(raw, f.rtt);
        base = Math.min(base, f.rtt - (at > 0 ? f.len / at : 0));
      }
    }
    base = Math.max(base, raw - this.targetMs / 2);
    return Number.isFinite(base) ? Math.max(0, base) : 0;
  }

  /** The queue delay the latest answers saw, ms (the second least of the last four). */
  get queueDelayMs(): number {
    const d = [...this.delays].sort((a, b) => a - b);
    return d[Math.min(1, d.length - 1)] ?? 0;
  }

  /** The chunk to send or ask now (see the file's comment), at most `ceiling`. */
  chunkBytes(ceiling = Number.POSITIVE_INFINITY): number {
    const budget = this.budgetBytes;
    const share = budget / (this.mode === "startup" ? STARTUP_CHUNKS : BUDGET_CHUNKS);
    const most = budget / (this.mode === "probing" ? 1 : 2);
    const c = Math.min(Math.max(this.rateChunk(), share), most);
    const least = Math.max(this.leastChunk(), Math.floor(budget / this.window));
    return Math.max(1, Math.min(Math.max(least, Math.floor(c / PAGE) * PAGE), Math.floor(ceiling)));
  }

  /**
   * Whether a request of `bytes` fits the budget (all of it) and the pace (`sendAtMs`) now. With
   * nothing in flight one always may: no answer would wake the caller, whatever slowdown began.
   */
  maySend(now: number, bytes: number): boolean {
    this.tick(now);
    if (this.inflight === 0) return true;
    return this.inflight + bytes <= this.budgetBytes && now >= this.pace.sendAt;
  }

  /** When the next request may leave by the pace (ms): the caller's wake-up time. */
  get sendAtMs(): number {
    return this.pace.sendAt;
  }
  /** A timed request's deadline (ms) from when it is the oldest in flight; none before an RTT. */
  get deadlineMs(): number | undefined {
    if (this.srtt === 0) return undefined;
    const rto = Math.max(MIN_CHUNK_DEADLINE_MS, 2 * this.srtt + 4 * this.rttvar) * this.backoff;
    return Math.min(MAX_CHUNK_DEADLINE_MS, rto);
  }
  /** When the oldest timed request in flight is late; undefined when none can be. */
  nextDeadlineAt(): number | undefined {
    const d = this.deadlineMs;
    const head = this.timed.values().next();
    if (d === undefined || head.done) return undefined;
    return head.value.since + d;
  }

  /** The oldest request in flight if it is late at `now` (report it with `onTimeout`). */
  late(now: number): SendTicket | undefined {
    const at = this.nextDeadlineAt();
    if (at === undefined || now < at) return undefined;
    return this.timed.values().next().value;
  }

  // --- what the scheduler reports
  /** Caps the budget (what `window` requests of the chunk ceilings could keep in flight). */
  setLimit(bytes: number, window = this.window): void {
    [this.limit, this.window] = [Math.max(2 * MIN_CHUNK_BYTES, bytes), Math.max(1, window)];
  }

  /** Room for a chunk, some in flight, nothing to send (D123, D124): samples say too little. */
  onAppLimited(): void {
    if (this.inflight > 0 && this.inflight + this.chunkBytes() <= this.budgetBytes)
      this.appLimitedUntil = this.delivered + this.inflight;
  }

  /** A request of `bytes` leaves now. */
  onSend(now: number, bytes: number, opts: SendOptions = {}): SendTicket {
    this.tick(now);
    if (this.inflight === 0) [this.deliveredAt, this.firstSentAt] = [now, now];
    const p = this.pace;
    if (this.inflight === 0 && this.srtt > 0 && now - this.lastAnswerAt >= this.srtt)
      // An idle spell emptied the queue as a slowdown does: the next is a period away (D135).
      [p.restartUntil, this.nextProbeAt] = [now + this.srtt, now + PROBE_INTERVAL_MS];
    // A long path's round of requests, sent at once, would come back at once and queue (D131).
    const long = this.srtt > 0 && this.baseRttMs > LONG_PATH_TARGETS * this.targetMs;
    const gain = now < p.restartUntil ? RESTART_PACE_GAIN : long ? LONG_PATH_PACE_GAIN : 0;
    if (gain > 0)
      p.sendAt = Math.max(p.sendAt, now) + bytes / ((gain * this.budgetBytes) / this.srtt);
    const t: SendTicket = {
      bytes,
      sentAt: now,
      first: opts.first === true,
      delivered: this.delivered,
      deliveredAt: this.deliveredAt,
      firstSentAt: this.firstSentAt,
      appLimited: this.appLimitedUntil !== 0,
      alone: this.inflight === 0,
      epoch: this.epoch,
      since: now,
      settled: false,
    };
    this.inflight += bytes;
    if (opts.timed ?? !t.first) this.timed.add(t);
    return t;
  }

  /** The answer to `t` arrived, carrying (or acknowledging) `bytes` of payload, `coded` as sent. */
  onAnswer(now: number, t: SendTicket, bytes: number, coded = bytes): void {
    if (!this.settle(now, t)) return;
    if (bytes > 0) this.coded += (coded / bytes - this.coded) / 4;
    const rtt = now - t.sentAt;
    this.delivered += bytes;
    this.deliveredAt = now;
    this.firstSentAt = t.sentAt;
    if (this.appLimitedUntil !== 0 && this.delivered >= this.appLimitedUntil)
      this.appLimitedUntil = 0;
    this.backoff = 1;
    this.rateSample(now, t, bytes);
    this.countRound(t);
    if (bytes > 0) this.addFloor(rtt, bytes);
    // A read's first answer may have waited for the peer to hash: its round trip is no queue.
    if (t.first) return this.tick(now);
    this.addRtt(rtt);
    if (t.sentAt < this.pausedBefore) return this.tick(now);
    const r = this.linkRate();
    const own = r > 0 ? Math.min(bytes / r, this.targetMs / 2) : this.targetMs / 2;
    const base = this.baseRttMs;
    const queued = bytes > 0 ? Math.max(0, rtt - Math.min(this.floorFor(bytes), base + own)) : 0;
    // An answer within a quarter of its own transmission after the last one waited past the
    // bottleneck with it (a reader that paused): one burst is one queue sample, its least.
    const since = now - this.lastAnswerAt;
    const burst = r > 0 && since < bytes / r / 4 && this.delays.length > 0;
    if (r > 0 && since > 0 && !burst && t.sentAt + base <= this.lastAnswerAt)
      this.pairs.push({ at: now, v: bytes / since });
    this.lastAnswerAt = now;
    this.delays.push(burst ? Math.min(this.delays.pop()!, queued) : queued);
    if (this.delays.length > DELAY_SAMPLES) this.delays.shift();
    // No answer for longer than a lost packet's resend takes: a slower link or a pause (D121).
    const hole = r > 0 && since > Math.max(base + 2 * this.targetMs, (4 * bytes) / r);
    this.control(now, t, bytes, queued, hole);
    this.tick(now);
  }

  /** A `busy` answer to `t`: the peer or the relay holds too much of ours. */
  onBusy(now: number, t: SendTicket): void {
    if (this.settle(now, t)) this.decrease(now);
  }

  /** `t` is lost (no answer by its deadline, or the relay's timeout). */
  onTimeout(now: number, t: SendTicket): void {
    if (!this.settle(now, t)) return;
    this.backoff = Math.min(this.backoff * 2, 32);
    this.decrease(now);
  }

  /** `t` ended without telling anything about the path (peer gone, aborted, a plain error). */
  onAbandon(now: number, t: SendTicket): void {
    this.settle(now, t);
  }

  // --- the law

  private control(now: number, t: SendTicket, bytes: number, queued: number, hole: boolean): void {
    // The queue ahead of a chunk may take ¾ of the target: a small request may also meet a chunk
    // in transmission, and a chunk is what the rate moves in a third of the target.
    const T = QUEUE_SHARE * this.targetMs;
    const delay = this.queueDelayMs;
    if (this.slowed && this.confirmSlowed(now, bytes)) return;
    if (this.mode === "probing") return;
    if (this.mode === "backed-off" && t.epoch < this.epoch) return;
    if (this.mode === "backed-off") this.mode = "steady";
    if (this.mode === "startup") {
      // Out at the first answers that queued ¾ of the target (the budget doubles each round trip:
      // a filtered delay would come late); of two, as a chunk sent with another waits for it.
      const prev = this.delays.length >= 2 ? this.delays[this.delays.length - 2]! : queued;
      if (Math.min(queued, prev) < 0.75 * T) {
        // BBR's startup gain: more than doubling a round trip while no queue shows at all.
        // Never past what the bottleneck moves with the target's queue; come back after a spurious
        // end, with no such measure, no faster than steady far under the target.
        if (t.appLimited) return;
        const most = this.bottleneckBudget(now);
        const back = this.resumed && most === Infinity;
        const gain = back ? FAR_UNDER_GAIN : queued < T / 4 ? STARTUP_GAIN : 1;
        this.budget = Math.max(this.budget, Math.min(this.budget + gain * bytes, this.limit, most));
        return;
      }
      // A cut in proportion to the queue: startup's rate (the budget's of a round trip ago) is low.
      this.mode = "steady";
      this.css = { left: this.resumed ? 0 : CSS_ROUNDS, grew: 0, pair: this.roundPair(now) };
      const base = this.baseRttMs;
      const factor = Math.min(1, (base + CUT * T) / (base + Math.min(queued, prev)));
      this.budget = Math.max(this.steady(this.rates.value), this.budget * factor);
      this.cutAt = now;
      return;
    }
    const arriving = this.lastAck;
    if (queued > 2 * T && arriving > 0 && (hole || arriving < this.rates.value / 3)) {
      // Far over, after a hole or at under a third of the rate: the link slowed (or paused: the
      // next answer tells). The rate is what answers arrive at; the budget halves to what it moves.
      this.slowed = { at: now, rates: this.rates, budget: this.budget };
      this.rates = new MaxFilter([{ at: now, v: arriving }]);
      this.budget = Math.max(this.steady(arriving), Math.min(this.budget, this.budgetBytes) / 2);
    }
    if (delay > T) {
      // Over: down in proportion, to what would queue CUT of the target at the rate the budget
      // moves now, once a round trip (answers to requests sent before a cut say nothing new).
      if (t.sentAt < this.cutAt) return;
      const base = this.baseRttMs;
      const factor = Math.max(MIN_CUT, (base + CUT * T) / (base + delay));
      this.budget = Math.max(2 * MIN_CHUNK_BYTES, this.budget * factor);
      this.cutAt = now;
      return;
    }
    if (t.appLimited) return;
    // Startup ended on a queue that is gone while the rate kept growing: the sender's own pace
    // (a socket restarting after idle paces from a few packets a round trip), not the path's. A
    // bottleneck that doubled its rate says so a round trip after (a link does not; a pace does).
    const calm = this.delays.length === DELAY_SAMPLES && Math.max(...this.delays) < T / 4;
    const css = this.css;
    if (css.left > 0 && css.pair === 0) css.pair = this.roundPair(now);
    const paced = css.pair > 0 && css.grew >= 1 && this.roundPair(now) >= CSS_PAIR_GAIN * css.pair;
    if ((css.grew >= CSS_GREW && calm) || paced) {
      [this.mode, this.css, this.resumed] = ["startup", { left: 0, grew: 0, pair: 0 }, true];
      return;
    }
    // Under: a step a round trip, the same for every flow (longer on a long path), less as the
    // queue nears the target (a quarter at least: flows converge); half the budget more while far
    // under, unless the pipe is full and the budget moves the rate with the target's queue.
    const frac = bytes / Math.max(1, this.budget);
    const room = !this.round.pipeFull || this.budget < this.steady(this.rates.value);
    const mult = room && Math.max(...this.delays) < T / 4 ? FAR_UNDER_GAIN : 0;
    const near = Math.max(0.25, (T - delay) / T);
    // With the pipe full a step fills at most T at the bottleneck's rate (the median pair; under
    // the rate delivered, sends spaced them) in a round trip: the delay shows it a round trip late.
    const c = this.round.pipeFull ? this.medianPair(8) : 0;
    const most = c > 0 && c >= 0.7 * this.rates.value ? c * T : Infinity;
    const step = Math.min(STEP_BYTES * (1 + this.baseRttMs / 50), most) * near;
    this.budget = Math.min(this.budget + bytes * mult + frac * step, this.limit);
  }

  /**
   * A "link slowed" verdict's next answer at a third of the old rate or more says the path paused:
   * undone as TCP undoes a spurious timeout's cut, and no answer the pause held counts (D121).
   */
  private confirmSlowed(now: number, bytes: number): boolean {
    const v = this.slowed!;
    this.slowed = undefined;
    if (bytes < (v.rates.value / 3) * (now - v.at)) return false;
    // The queue emptied while the sender stopped; delays read before it may carry its onset.
    [this.rates, this.delays, this.pausedBefore] = [v.rates, [], v.at];
    this.budget = Math.max(this.budget, v.budget);
    return true;
  }

  private decrease(now: number): void {
    // One decrease per round trip: the busy answers or losses of one window are one event.
    if (now - this.lastDecrease < Math.max(this.srtt, 1)) return;
    this.lastDecrease = now;
    if (this.mode === "probing") this.saved = this.saved / 2;
    else {
      this.mode = "backed-off";
      this.budget = Math.max(2 * MIN_CHUNK_BYTES, this.budget / 2);
    }
    this.epoch++;
  }

  /** Time-driven changes: the start and the end of a slowdown. */
  private tick(now: number): void {
    if (this.srtt === 0) return;
    if (Number.isNaN(this.nextProbeAt)) this.nextProbeAt = now + PROBE_INTERVAL_MS;
    if (this.mode === "probing") {
      if (Number.isNaN(this.drainedAt) && this.inflight <= this.budgetBytes) this.drainedAt = now;
      const end = this.drainedAt + Math.max(PROBE_MIN_MS, this.srtt);
      if (now >= end) {
        this.mode = "steady";
        // The budget it had, up to what the rate moves with the target's queue (all of it at once
        // would reach the queue the slowdown emptied as one burst).
        this.budget = Math.max(this.budget, Math.min(this.saved, this.steady(this.rates.value)));
        this.nextProbeAt = now + PROBE_INTERVAL_MS;
      }
      return;
    }
    // No slowdown over the target: the queue is not empty anyway, and the budget is falling.
    if (now < this.nextProbeAt || this.mode === "startup") return;
    if (this.queueDelayMs > QUEUE_SHARE * this.targetMs) return;
    this.mode = "probing";
    this.saved = this.budget;
    this.budget = Math.max(2 * MIN_CHUNK_BYTES, this.rates.value * this.baseRttMs);
    this.drainedAt = Number.NaN;
    this.oldFloors = this.floors;
    this.floors = new Map();
    this.epoch++;
  }

  private settle(now: number, t: SendTicket): boolean {
    if (t.settled) return false;
    t.settled = true;
    this.inflight -= t.bytes;
    const head = this.timed.values().next().value;
    this.timed.delete(t);
    const next = head === t ? this.timed.values().next().value : undefined;
    if (next) next.since = Math.max(next.sentAt, now);
    return true;
  }

  /** Takes BBR's delivery-rate sample (bytes/ms) of one answer, and the rate answers arrive at. */
  private rateSample(now: number, t: SendTicket, bytes: number): void {
    const window = Math.max(RATE_WINDOW_MS, RATE_WINDOW_RTTS * this.baseRttMs);
    this.rates.expire(now, window);
    this.acks.expire(now, 2 * PROBE_INTERVAL_MS);
    const old = now - 2 * PROBE_INTERVAL_MS;
    while (this.pairs.length > 64 || (this.pairs[0]?.at ?? now) < old) this.pairs.shift();
    if (bytes <= 0) return;
    const got = this.delivered - t.delivered;
    // A request sent alone says how long one answer took, not how fast answers arrive.
    if (!t.alone && now > t.deliveredAt) {
      this.acks.add(now, (this.lastAck = got / (now - t.deliveredAt)));
    }
    // Bytes delivered while it was out, over the longer of its send and answer intervals (a
    // burst of answers read at once must not inflate it).
    const interval = Math.max(t.sentAt - t.firstSentAt, now - t.deliveredAt);
    const sample = interval > 0 ? got / interval : 0;
    if (sample > 0 && (!t.appLimited || sample > this.rates.value)) this.rates.add(now, sample);
  }

  /** What the bottleneck (the last round trip's pairs, three at least) moves in base + target. */
  private bottleneckBudget(now: number): number {
    const c = this.roundPair(now);
    // No slower than what it delivers (D127's reason: sends may space the pairs); none: no bound.
    return c === 0 ? Infinity : Math.max(c, this.rates.value) * (this.baseRttMs + this.targetMs);
  }
  /** The bottleneck's rate by the last round trip's pairs (three at least; else 0). */
  private roundPair(now: number): number {
    return this.medianPair(3, now - Math.max(this.srtt, this.baseRttMs));
  }
  /** The median packet pair taken at `since` or later, if there are `least` of them; else 0. */
  private medianPair(least: number, since = Number.NEGATIVE_INFINITY): number {
    const v = this.pairs.filter((p) => p.at >= since).map((p) => p.v);
    return v.length < least ? 0 : v.sort((a, b) => a - b)[v.length >> 1]!;
  }
  /** What the rate moves in a third of the target (the first chunk before any answer). */
  private rateChunk(): number {
    const r = this.rates.value;
    return r === 0 ? INITIAL_CHUNK_BYTES : Math.max(this.leastChunk(), (r * this.targetMs) / 3);
  }
  /** The least chunk: what carries `MIN_CHUNK_BYTES` on the wire (coded, up to 4× more: D128). */
  private leastChunk(): number {
    const widen = Math.min(4, Math.max(1, 1 / this.coded));
    return Math.floor((MIN_CHUNK_BYTES * widen) / PAGE) * PAGE;
  }
  /** Ends a round trip at the answer to its first request (BBR's); has the rate stopped growing? */
  private countRound(t: SendTicket): void {
    const r = this.round;
    if (t.delivered < r.end) return;
    r.end = this.delivered;
    const grew = this.rates.value >= 1.25 * r.rate;
    const c = this.css;
    if (c.left > 0) [c.left, c.grew, c.pair] = grew ? [c.left - 1, c.grew + 1, c.pair] : [0, 0, 0];
    if (grew) [r.rate, r.flat, r.pipeFull] = [this.rates.value, 0, false];
    else if (!t.appLimited && ++r.flat >= PIPE_FULL_ROUNDS) r.pipeFull = true;
  }
  /** The link's rate as far as a chunk's own transmission goes: the larger estimate. */
  private linkRate(): number {
    return Math.max(this.rates.value, this.acks.value);
  }
  /** `rate × (base + target)`: the bytes that keep the path full with the target's queue. */
  private steady(rate: number): number {
    return Math.max(2 * MIN_CHUNK_BYTES, rate * (this.baseRttMs + this.targetMs));
  }
  /**
   * The least round trip of chunks of about `len` bytes (a quarter octave), this period or the last;
   * else of the next smaller size seen (its extra transmission reads as queue), or the next larger.
   */
  private floorFor(len: number): number {
    const key = sizeClass(len);
    let best: { k: number; rtt: number } | undefined;
    const rank = (k: number): number => (k === key ? 0 : k < key ? key - k : 1000 + k - key);
    for (const m of [this.floors, this.oldFloors]) {
      for (const [k, f] of m) {
        const better = !best || rank(k) < rank(best.k) || (k === best.k && f.rtt < best.rtt);
        if (better) best = { k, rtt: f.rtt };
      }
    }
    return best?.rtt ?? Number.POSITIVE_INFINITY;
  }
  private addFloor(rtt: number, len: number): void {
    const key = sizeClass(len);
    const f = this.floors.get(key);
    if (!f || rtt < f.rtt) this.floors.set(key, { rtt, len, rate: this.linkRate() });
  }
  /** RFC 6298's smoothed round trip and its variation. */
  private addRtt(rtt: number): void {
    if (this.srtt === 0) [this.srtt, this.rttvar] = [rtt, rtt / 2];
    else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - rtt);
      this.srtt = 0.875 * this.srtt + 0.125 * rtt;
    }
  }
}
