/**
 * Event-loop delay from `perf_hooks.monitorEventLoopDelay`, as the delay beyond the sampling
 * interval.
 *
 * Why the subtraction: the histogram records, at each tick of a repeating libuv timer of
 * `resolution` ms, the whole time since the previous tick (Node's `RecordDelta`: `uv_hrtime() -
 * prev_`), not how late the tick came. On an idle loop at resolution 10 it reads min ≈ 10.0,
 * p50 ≈ 10.2, p99 ≈ 10.5–11 ms. The delay an event due at that moment waited is that interval
 * minus the resolution. Subtracting a constant keeps the order of the samples, so every percentile
 * and the max of the delay are the interval's minus the resolution (clamped at 0: libuv's
 * millisecond clock can fire a tick slightly early).
 *
 * Why resolution 10 and not 1–2 ms: the percentiles are per tick, not per unit of time. A stall
 * is sampled once whatever its length, while a finer timer adds many idle ticks; so a finer
 * resolution dilutes the p99 (measured: 15 ms stalls five times a second read p99 ≈ 14 ms at
 * resolution 2–10 but 2.6 ms at resolution 1). A stall shorter than the resolution is still
 * caught at resolution 10, with probability (its length / 10 ms) and its remaining length.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";

/** Timer interval of the bench's and the soak's event-loop monitors, ms. */
export const ELD_RESOLUTION_MS = 10;

export interface EldSummary {
  /** Delay beyond the sampling interval, ms. */
  p50: number;
  p99: number;
  max: number;
  /** Ticks sampled. */
  count: number;
  resolutionMs: number;
  /** What the histogram itself holds: the whole tick interval (resolution + delay), ms. */
  intervalP99: number;
  intervalMax: number;
}

/** The part of a tick interval (ms) that is delay, i.e. beyond the sampling resolution. */
export function delayBeyondInterval(intervalMs: number, resolutionMs: number): number {
  return Math.max(0, intervalMs - resolutionMs);
}

/** The subset of `IntervalHistogram` read here (values in nanoseconds). */
export interface NsHistogram {
  percentile(p: number): number;
  readonly max: number;
  readonly count: number;
}

export function summarizeEld(h: NsHistogram, resolutionMs: number): EldSummary {
  const ms = (ns: number): number => ns / 1e6;
  const delay = (ns: number): number =>
    h.count > 0 ? delayBeyondInterval(ms(ns), resolutionMs) : 0;
  return {
    p50: delay(h.percentile(50)),
    p99: delay(h.percentile(99)),
    max: delay(h.max),
    count: h.count,
    resolutionMs,
    intervalP99: h.count > 0 ? ms(h.percentile(99)) : 0,
    intervalMax: h.count > 0 ? ms(h.max) : 0,
  };
}

/** An enabled event-loop monitor at `resolutionMs`. */
export function startEldMonitor(resolutionMs = ELD_RESOLUTION_MS): IntervalHistogram {
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  h.enable();
  return h;
}
