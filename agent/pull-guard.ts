/**
 * What keeps a pull from lasting forever against a Computer that answers, but not enough
 * (D87): a minimum progress rule (curl's `--speed-limit` / `--speed-time`), an optional
 * overall bound (`--max-time`), and the judgment of answers far shorter than asked. Plus the
 * gate of a pull's rate caps (rate-limit.ts). Passive objects: the time is an argument.
 */
import { ChunkContractError, TooSlowError } from "./errors.ts";
import type { RateLimit } from "./rate-limit.ts";

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
