/**
 * The path controller's vocabulary (agent/path-controller.ts): its states, options, and the ticket
 * a request carries from `onSend` to its outcome. Types only: nothing here runs.
 */

/** What the controller is doing (see the file's comment). */
export type PathState = "startup" | "steady" | "probing" | "backed-off";

export interface PathControllerOptions {
  /** The queue delay (ms) the path's transfers may add above its base round trip. Default 60. */
  targetDelayMs?: number;
}

export interface SendOptions {
  /** A read's first chunk: no queue-delay sample from it, and no deadline by default. */
  first?: boolean;
  /** Whether the controller judges its deadline (`late`). Default: unless `first`. */
  timed?: boolean;
}

/** One request in flight, as `onSend` returned it; hand it back with its outcome. */
export interface SendTicket {
  /** The payload bytes the request carries or asks for. */
  readonly bytes: number;
  /** When it left (the caller's clock). */
  readonly sentAt: number;
  /** A read's first chunk: its answer may wait for the Computer to hash; no deadline, no delay. */
  readonly first: boolean;
  /** @internal BBR's snapshot at the send. */
  readonly delivered: number;
  readonly deliveredAt: number;
  readonly firstSentAt: number;
  /** @internal Sent while the transfer left budget unused: its rate sample says too little. */
  readonly appLimited: boolean;
  /** @internal Sent with nothing else in flight; during which slowdown or back-off. */
  readonly alone: boolean;
  readonly epoch: number;
  /** @internal When its deadline started to count (it became the oldest in flight). */
  since: number;
  settled: boolean;
}
