/**
 * A pino logger whose lines a test can read and wait for: `lines` holds every line parsed,
 * `seen(msg, n)` resolves once `n` lines with that `msg` were written. For tests whose evidence
 * is a log line (a retry logged once per episode, an outage said once), never as a pacing device.
 */
import { Writable } from "node:stream";
import { pino, type Logger } from "pino";

export interface LogLines {
  readonly logger: Logger;
  /** Every line written so far, parsed. */
  readonly lines: Record<string, unknown>[];
  /** Lines whose `msg` is `msg` (or matches it). */
  count(msg: string | RegExp): number;
  /** Resolves once `n` lines with this `msg` were written. */
  seen(msg: string, n: number): Promise<void>;
}

export function logLines(level: pino.Level = "info"): LogLines {
  const lines: Record<string, unknown>[] = [];
  const waiters: { msg: string; n: number; resolve: () => void }[] = [];
  const count = (msg: string | RegExp): number =>
    lines.filter((l) => (typeof msg === "string" ? l.msg === msg : msg.test(String(l.msg)))).length;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n")) {
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      for (const w of [...waiters]) {
        if (count(w.msg) >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
      done();
    },
  });
  return {
    logger: pino({ level }, stream),
    lines,
    count,
    seen: (msg, n) =>
      count(msg) >= n
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ msg, n, resolve })),
  };
}
