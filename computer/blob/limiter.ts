/**
 * Bounded concurrency for chunk reads: at most `maxInFlight` run at once, at most `maxQueue` wait
 * (FIFO); anything beyond gets `null` at once, which the engine answers with the flat `busy`
 * error instead of growing memory without bound.
 */
export type Release = () => void;

export class Limiter {
  readonly #maxInFlight: number;
  readonly #maxQueue: number;
  readonly #waiters: Array<(release: Release | null) => void> = [];
  #active = 0;
  #closed = false;
  /** Called whenever the counts change (for gauges). */
  onChange: ((active: number, queued: number) => void) | undefined;

  constructor(maxInFlight: number, maxQueue: number) {
    if (!(maxInFlight >= 1)) throw new Error("maxInFlight must be >= 1");
    this.#maxInFlight = Math.floor(maxInFlight);
    this.#maxQueue = Math.max(0, Math.floor(maxQueue));
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#waiters.length;
  }

  /** A release function once a slot is free; `null` when the queue is full or the limiter closed. */
  acquire(): Promise<Release | null> {
    if (this.#closed) return Promise.resolve(null);
    if (this.#active < this.#maxInFlight) {
      this.#active++;
      this.#changed();
      return Promise.resolve(this.#releaser());
    }
    if (this.#waiters.length >= this.#maxQueue) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#changed();
    });
  }

  /** Refuses new work and fails every waiter (`null`). Running work finishes normally. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w(null);
    this.#changed();
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next)
        next(this.#releaser()); // hand the slot over: #active unchanged
      else this.#active--;
      this.#changed();
    };
  }

  #changed(): void {
    this.onChange?.(this.#active, this.#waiters.length);
  }
}
