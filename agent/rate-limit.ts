/**
 * The rate cap of pulls (`maxRate`, the CLI's `--limit-rate`): a token bucket that a pull draws
 * from before it sends a request. One bucket per client is shared by every pull of that client;
 * a pull's own `maxRate` adds a bucket of its own, and a request waits for both.
 *
 * What it counts: the blob's bytes as they travel (binary carriage: the resource's bytes; base64:
 * the characters; a coded chunk: its coded bytes). A request is charged the bytes it asks for
 * when it is sent, and settled against what its answer carried (a short answer, a compressed one
 * or a failed request gives back the difference), so the long-run rate is the cap whatever the
 * answers were. The bucket runs into debt by one request, never more: a request goes out when
 * the bucket is not in debt, so the time a request waits is exact and no request is ever split
 * to fit.
 *
 * A passive object: it takes the time as an argument and owns no timer (the pull schedules its
 * wake-up from `wait`), so its tests run on a simulated clock.
 */

/**
 * The burst a bucket allows after an idle spell: this much of a second at the rate. Enough for a
 * pull that fell behind (a busy machine stalled it) to catch up, so the rate over seconds stays
 * the cap; small enough that a pull never sends more than a quarter second ahead of it.
 */
const BURST_SECONDS = 0.25;

export class RateLimit {
  /** Bytes that may be sent now; negative while in debt. */
  private tokens: number;
  private at: number;

  /** `bytesPerSecond` > 0; `now` in ms (performance.now()). */
  constructor(
    readonly bytesPerSecond: number,
    now: number,
  ) {
    if (!(bytesPerSecond > 0) || !Number.isFinite(bytesPerSecond)) {
      throw new RangeError(`a rate cap must be a positive number of bytes a second`);
    }
    this.tokens = this.burst;
    this.at = now;
  }

  /** The most a bucket holds: `BURST_SECONDS` of the rate (at least a byte). */
  private get burst(): number {
    return Math.max(1, this.bytesPerSecond * BURST_SECONDS);
  }

  private refill(now: number): void {
    if (now > this.at) {
      this.tokens = Math.min(
        this.burst,
        this.tokens + ((now - this.at) * this.bytesPerSecond) / 1000,
      );
      this.at = now;
    }
  }

  /** Milliseconds until a request may go (0: now). */
  wait(now: number): number {
    this.refill(now);
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.bytesPerSecond);
  }

  /** Charges `bytes` for a request sent now. */
  take(bytes: number, now: number): void {
    this.refill(now);
    this.tokens -= bytes;
  }

  /** Gives back `bytes` charged but not carried (negative: charges what was carried beyond). */
  settle(bytes: number): void {
    this.tokens = Math.min(this.burst, this.tokens + bytes);
  }

  /**
   * A good chunk size under this cap: what the rate moves in 1/8 s (at least 4 KiB), so the
   * bytes arrive evenly rather than in bursts of a large chunk.
   */
  get chunkBytes(): number {
    return Math.max(4096, Math.floor(this.bytesPerSecond / 8));
  }
}

const UNIT: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/**
 * A rate as curl's `--limit-rate` takes it: bytes a second, or a number with a suffix `k`, `m`,
 * `g` or `t` (any case, powers of 1024: `500k`, `2M`, `1.5G`); an optional trailing `B` or `/s`
 * is accepted (`2MB/s`). Undefined when the text is not a positive rate.
 */
export function parseRate(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([kmgt]?)(?:i?b)?(?:\/s)?\s*$/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]) * UNIT[m[2]!.toLowerCase()]!;
  return Number.isFinite(n) && n >= 1 ? Math.floor(n) : undefined;
}
