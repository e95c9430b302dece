/**
 * Bounded concurrency for chunk reads: at most `maxInFlight` run at once, at most `maxQueue` wait
 * (FIFO), and none waits longer than `maxQueueWaitMs`. A request refused for any of these reasons
 * gets a `Refusal` instead of a slot, which the engine answers with the flat `busy` error.
 *
 * Why a wait bound as well as a length bound: on a starved CPU (the soak's burst of 1,000
 * `client:get_blob` with the machine saturated) a full queue drains so slowly that a request can
 * sit in it past the Agent's ack wait and the Server's relay timeout (both 30 s). The Agent then
 * sees a timeout (408 / its own TimeoutError) for a request the Computer would still serve, and
 * the Computer later spends a read on an answer nobody waits for. A request that has waited
 * `maxQueueWaitMs` is refused instead, and never starts its read: the Agent learns "busy, retry"
 * while it is still listening. The bound is checked when a slot is handed over and, so a queue
 * stuck behind slow reads answers too, by one timer armed for the oldest waiter (FIFO: the head
 * always expires first), not one timer per waiter.
 */
export type Release = () => void;

/** Why a request got no slot: queue at its length bound, waited too long, limiter closed. */
export type Refusal = "queue_full" | "queue_wait" | "closed";

/** Time source and one-shot timer; injected by tests so expiry is deterministic. */
export interface LimiterClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Calls `fn` after `ms`; returns a cancel function. Must not keep the process alive. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const realClock: LimiterClock = {
  now: () => performance.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

export interface LimiterOptions {
  maxInFlight: number;
  maxQueue: number;
  /** Longest time a request may wait for a slot; 0 or Infinity = no wait bound. */
  maxQueueWaitMs?: number;
  clock?: LimiterClock;
}

interface Waiter {
  readonly enqueuedAt: number;
  readonly resolve: (slot: Release | Refusal) => void;
}

export class Limiter {
  readonly #maxInFlight: number;
  readonly #maxQueue: number;
  readonly #maxWait: number;
  readonly #clock: LimiterClock;
  /** FIFO; `#head` is the index of the oldest live waiter (amortized O(1) shift). */
  #waiters: Waiter[] = [];
  #head = 0;
  #active = 0;
  #closed = false;
  #cancelTimer: (() => void) | undefined;
  /** Called whenever the counts change (for gauges). */
  onChange: ((active: number, queued: number) => void) | undefined;

  constructor(o: LimiterOptions) {
    if (!(o.maxInFlight >= 1)) throw new Error("maxInFlight must be >= 1");
    this.#maxInFlight = Math.floor(o.maxInFlight);
    this.#maxQueue = Math.max(0, Math.floor(o.maxQueue));
    const wait = o.maxQueueWaitMs ?? 0;
    if (!(wait >= 0)) throw new Error("maxQueueWaitMs must be >= 0");
    this.#maxWait = wait === 0 ? Infinity : wait;
    this.#clock = o.clock ?? realClock;
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#waiters.length - this.#head;
  }

  /** A release function once a slot is free, or why there will be none. */
  acquire(): Promise<Release | Refusal> {
    if (this.#closed) return Promise.resolve("closed");
    if (this.#active < this.#maxInFlight) {
      this.#active++;
      this.#changed();
      return Promise.resolve(this.#releaser());
    }
    if (this.queued >= this.#maxQueue) return Promise.resolve("queue_full");
    return new Promise((resolve) => {
      this.#waiters.push({ enqueuedAt: this.#clock.now(), resolve });
      if (this.#cancelTimer === undefined) this.#arm();
      this.#changed();
    });
  }

  /**
   * Refuses (`queue_wait`) every waiter that has waited `maxQueueWaitMs` or longer. Runs from the
   * timer and on every hand-over; public so a test driving a fake clock can call it.
   */
  expire(): void {
    if (this.#maxWait === Infinity || this.queued === 0) return;
    const now = this.#clock.now();
    let n = 0;
    while (this.queued > 0 && now - this.#waiters[this.#head]!.enqueuedAt >= this.#maxWait) {
      this.#shift()!.resolve("queue_wait");
      n++;
    }
    if (n > 0) this.#changed();
  }

  /** Refuses new work and fails every waiter (`closed`). Running work finishes normally. */
  close(): void {
    this.#closed = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    while (this.queued > 0) this.#shift()!.resolve("closed");
    this.#changed();
  }

  #shift(): Waiter | undefined {
    if (this.#head >= this.#waiters.length) return undefined;
    const w = this.#waiters[this.#head++];
    // Compact once the dead prefix is at least half the array (amortized O(1) per shift).
    if (this.#head * 2 >= this.#waiters.length) {
      this.#waiters = this.#waiters.slice(this.#head);
      this.#head = 0;
    }
    return w;
  }

  /**
   * Arms the single timer for the oldest waiter's deadline. It is not moved when that waiter gets
   * a slot first (no timer churn per chunk): it then fires early, finds nothing overdue and arms
   * itself for the new head.
   */
  #arm(): void {
    if (this.#closed || this.queued === 0 || this.#maxWait === Infinity) return;
    const head = this.#waiters[this.#head]!;
    const due = Math.max(0, head.enqueuedAt + this.#maxWait - this.#clock.now());
    this.#cancelTimer = this.#clock.setTimer(() => {
      this.#cancelTimer = undefined;
      this.expire();
      this.#arm();
    }, due);
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.expire(); // an overdue head must not get the slot: it would read for nobody
      const next = this.#shift();
      if (next)
        next.resolve(this.#releaser()); // hand the slot over: #active unchanged
      else this.#active--;
      this.#changed();
    };
  }

  #changed(): void {
    this.onChange?.(this.#active, this.queued);
  }
}
