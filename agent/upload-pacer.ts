/**
 * How an upload's chunks are paced: the one place the upload's sender asks how big a chunk is,
 * whether one more may leave, and reports what became of each. `PathPacer` is the path controller
 * (agent/path-controller.ts, the one pulls use) driven from an upload: the controller is passive,
 * so the pacer gives it the time and keeps the one timer that declares a chunk late. A late upload
 * chunk is not sent again (chunks must arrive in order; the Computer's ack still comes, or the
 * request's own backstop ends the attempt): lateness only slows the path down. `FixedPacer`
 * keeps a fixed window of fixed chunks (a client without a controller for that Computer).
 */
import { MAX_CHUNK_DEADLINE_MS, type PathController, type SendTicket } from "./path-controller.ts";

/** A chunk in flight, as the pacer tracks it. */
export type PaceTicket = object;

/** The pacer as the upload's sender uses it. */
export interface UploadPacer {
  /** The chunk to send now, at most `ceiling`. */
  chunkBytes(ceiling: number): number;
  /** Whether a chunk of `bytes` may leave now (all of it must fit the budget). */
  maySend(bytes: number): boolean;
  /** How long the path's pace holds a chunk the budget has room for (ms; 0: an answer will). */
  paceWaitMs(): number;
  /** The most the upload could keep in flight (its `window` of chunks × its chunk ceiling). */
  setLimit(bytes: number, window: number): void;
  /** The local ack wait of a chunk, a backstop (undefined: the client's request timeout). */
  readonly ackTimeoutMs: number | undefined;
  /** The smoothed round trip of a chunk, ms (0 before the first ack). */
  readonly rttMs: number;
  sent(bytes: number, first: boolean): PaceTicket;
  answered(t: PaceTicket, bytes: number): void;
  /** The Server or the Computer answered busy. */
  busy(t: PaceTicket): void;
  /** No answer in time (ours, or the Server's relay timeout). */
  timeout(t: PaceTicket): void;
  /** Ended without telling anything about the path (an error, an abort, a peer gone). */
  abandoned(t: PaceTicket): void;
  /** Budget left and nothing to send (the rest is in flight). */
  idle(): void;
  /** The upload ended: no timer is left behind. */
  close(): void;
}

/** `window` chunks of `chunk` bytes in flight, whatever the path. */
export class FixedPacer implements UploadPacer {
  private inflight = 0;
  private limit = Number.POSITIVE_INFINITY;
  readonly ackTimeoutMs = undefined;
  readonly rttMs = 0;

  constructor(
    private readonly chunk: number,
    private readonly window: number,
  ) {}

  chunkBytes(ceiling: number): number {
    return Math.max(1, Math.min(ceiling, this.chunk));
  }
  maySend(bytes: number): boolean {
    return this.inflight + bytes <= Math.min(this.limit, this.chunk * this.window);
  }
  paceWaitMs(): number {
    return 0;
  }
  setLimit(bytes: number): void {
    this.limit = bytes;
  }
  sent(bytes: number): PaceTicket {
    this.inflight += bytes;
    return { bytes };
  }
  private settle(t: PaceTicket): void {
    this.inflight -= (t as { bytes: number }).bytes;
  }
  answered(t: PaceTicket): void {
    this.settle(t);
  }
  busy(t: PaceTicket): void {
    this.settle(t);
  }
  timeout(t: PaceTicket): void {
    this.settle(t);
  }
  abandoned(t: PaceTicket): void {
    this.settle(t);
  }
  idle(): void {}
  close(): void {}
}

/** The path controller, driven by one upload (several uploads may share the controller). */
export class PathPacer implements UploadPacer {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly ctl: PathController) {}

  get ackTimeoutMs(): number | undefined {
    // Lateness is judged here; the request's own wait only ends an answer that never comes.
    return this.ctl.deadlineMs !== undefined ? MAX_CHUNK_DEADLINE_MS : undefined;
  }
  get rttMs(): number {
    return this.ctl.rttMs;
  }
  chunkBytes(ceiling: number): number {
    return this.ctl.chunkBytes(ceiling);
  }
  maySend(bytes: number): boolean {
    return this.ctl.maySend(performance.now(), bytes);
  }
  paceWaitMs(): number {
    return Math.max(0, this.ctl.sendAtMs - performance.now());
  }
  setLimit(bytes: number, window: number): void {
    this.ctl.setLimit(bytes, window);
  }
  sent(bytes: number, first: boolean): PaceTicket {
    const t = this.ctl.onSend(performance.now(), bytes, { first });
    this.arm();
    return t;
  }
  answered(t: PaceTicket, bytes: number): void {
    this.ctl.onAnswer(performance.now(), t as SendTicket, bytes);
    this.arm();
  }
  busy(t: PaceTicket): void {
    this.ctl.onBusy(performance.now(), t as SendTicket);
  }
  timeout(t: PaceTicket): void {
    this.ctl.onTimeout(performance.now(), t as SendTicket);
  }
  abandoned(t: PaceTicket): void {
    this.ctl.onAbandon(performance.now(), t as SendTicket);
  }
  idle(): void {
    this.ctl.onAppLimited();
  }
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** One timer at the oldest chunk's deadline (it moves later as acks arrive). */
  private arm(): void {
    const at = this.ctl.nextDeadlineAt();
    if (at === undefined || at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  /** Every chunk the controller says is late counts as lost for the path's estimates. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (let t = this.ctl.late(now); t; t = this.ctl.late(now)) this.ctl.onTimeout(now, t);
    this.arm();
  }
}
