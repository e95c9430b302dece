/**
 * The acks a connection waits for, each with its local deadline and abort signal, without a
 * timer or an abort listener per request: a pull sends hundreds of chunk requests a second, and
 * a Node timer plus an `AbortSignal` listener cost more per request than the rest of the Agent's
 * bookkeeping together. Requests with the same timeout share one timer (their deadlines come in
 * the order they were sent, so the oldest is always the next to expire); requests in flight
 * with the same signal (a pull's window) share one listener on it.
 */
import { RequestTimeoutError, abortError } from "./errors.ts";

const settledAlready = (): void => undefined;

/**
 * One request waiting for its ack. Settled exactly once: by the ack, a failure or an abort; then
 * it lets go of its promise's callbacks (a resolved promise holds its value: a whole chunk).
 */
export class PendingAck<T> {
  settled = false;
  constructor(
    readonly event: string,
    readonly timeoutMs: number,
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
    private onResolve: (value: T) => void,
    private onReject: (err: Error) => void,
  ) {}

  resolve(value: T): void {
    const f = this.onResolve;
    this.release();
    f(value);
  }
  reject(err: Error): void {
    const f = this.onReject;
    this.release();
    f(err);
  }
  private release(): void {
    this.onResolve = settledAlready;
    this.onReject = settledAlready;
  }
}

/** Requests of one timeout value, oldest first, and the one timer that expires them. */
class DeadlineLane {
  /** Oldest first; slots before `head` are emptied as they are passed. */
  private readonly queue: (PendingAck<never> | undefined)[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly expire: (p: PendingAck<never>) => void,
    /** The lane has nothing left and no timer: the table may forget it. */
    private readonly idle: () => void,
  ) {}

  push(p: PendingAck<never>): void {
    this.queue.push(p);
    if (this.timer === undefined) this.arm(p.timeoutMs);
  }

  /** Drops settled requests from the front (acks mostly come back in order). */
  compact(): void {
    const q = this.queue;
    while (this.head < q.length && q[this.head]!.settled) q[this.head++] = undefined;
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
    } else if (this.head > 64 && this.head * 2 > q.length) {
      q.splice(0, this.head);
      this.head = 0;
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.head = 0;
  }

  private arm(ms: number): void {
    // Never keeps the process alive on its own: the socket does while requests are pending.
    this.timer = setTimeout(() => this.onTimer(), Math.max(1, ms)).unref();
  }

  private onTimer(): void {
    this.timer = undefined;
    const now = performance.now();
    this.compact();
    const q = this.queue;
    while (this.head < q.length) {
      const p = q[this.head]!;
      if (!p.settled && p.deadline > now) break;
      q[this.head++] = undefined;
      if (!p.settled) this.expire(p);
    }
    this.compact();
    if (this.timer !== undefined) return;
    if (this.head < q.length) this.arm(q[this.head]!.deadline - now);
    else this.idle();
  }
}

/** Every pending ack of one connection. */
export class AckTable {
  private readonly pending = new Set<PendingAck<never>>();
  private readonly lanes = new Map<number, DeadlineLane>();
  private readonly bySignal = new WeakMap<AbortSignal, SignalGroup>();

  get size(): number {
    return this.pending.size;
  }

  /** Registers a request; it fails by itself at its deadline or when `signal` aborts. */
  add<T>(
    event: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    resolve: (value: T) => void,
    reject: (err: Error) => void,
  ): PendingAck<T> {
    const deadline = performance.now() + timeoutMs;
    const p = new PendingAck<T>(event, timeoutMs, deadline, signal, resolve, reject);
    const q = p as unknown as PendingAck<never>;
    this.pending.add(q);
    let lane = this.lanes.get(timeoutMs);
    if (!lane) {
      lane = new DeadlineLane(
        (x) => this.fail(x, new RequestTimeoutError(x.event, x.timeoutMs)),
        () => this.lanes.delete(timeoutMs),
      );
      this.lanes.set(timeoutMs, lane);
    }
    lane.push(q);
    if (signal) this.watch(signal, q);
    return p;
  }

  /** Takes `p` out of the table; false when it was already settled (timed out, aborted). */
  take<T>(p: PendingAck<T>): boolean {
    if (p.settled) return false;
    this.forget(p);
    return true;
  }

  /** Rejects every pending request (our socket dropped, or the client closed). */
  failAll(err: Error): void {
    for (const p of [...this.pending]) this.fail(p, err);
  }

  /** Stops the timers (the client closed). */
  close(): void {
    for (const lane of this.lanes.values()) lane.close();
    this.lanes.clear();
  }

  private fail(p: PendingAck<never>, err: Error): void {
    if (p.settled) return;
    this.forget(p);
    p.reject(err);
  }

  private forget(p: PendingAck<never>): void {
    p.settled = true;
    this.pending.delete(p);
    this.lanes.get(p.timeoutMs)?.compact();
    if (p.signal) this.bySignal.get(p.signal)?.leave(p);
  }

  /** One listener per signal while any of its requests is pending. */
  private watch(signal: AbortSignal, p: PendingAck<never>): void {
    let group = this.bySignal.get(signal);
    if (!group) {
      group = new SignalGroup(
        signal,
        (x, err) => this.fail(x, err),
        () => this.bySignal.delete(signal),
      );
      this.bySignal.set(signal, group);
    }
    group.join(p);
  }
}

/** The pending requests of one signal, and the one abort listener they share. */
class SignalGroup {
  private readonly members = new Set<PendingAck<never>>();
  private readonly onAbort = (): void => {
    this.dispose();
    const err = abortError(this.signal);
    for (const p of [...this.members]) this.fail(p, err);
  };

  constructor(
    private readonly signal: AbortSignal,
    private readonly fail: (p: PendingAck<never>, err: Error) => void,
    private readonly dispose: () => void,
  ) {
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  join(p: PendingAck<never>): void {
    this.members.add(p);
  }

  leave(p: PendingAck<never>): void {
    this.members.delete(p);
    if (this.members.size > 0 || this.signal.aborted) return;
    this.signal.removeEventListener("abort", this.onAbort);
    this.dispose();
  }
}
