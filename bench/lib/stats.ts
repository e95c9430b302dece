/** Small statistics helpers for latency samples (milliseconds) and rates. */

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array; 0 for an empty one. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? 0;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : 0,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

/** MB/s with MB = 10^6 bytes (as everywhere in the reports). */
export function mbPerSec(bytes: number, seconds: number): number {
  return seconds > 0 ? bytes / 1e6 / seconds : 0;
}

export const KiB = 1024;
export const MiB = 1024 * 1024;

/** "64 KiB", "1 MiB", "731.5 KiB": how chunk sizes are named in the report. */
export function formatBytes(n: number): string {
  if (n >= MiB && n % MiB === 0) return `${n / MiB} MiB`;
  if (n >= MiB) return `${(n / MiB).toFixed(2)} MiB`;
  if (n % KiB === 0) return `${n / KiB} KiB`;
  return `${(n / KiB).toFixed(1)} KiB`;
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Median of a sample (mean of the middle two for an even count); NaN for an empty one. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

/** Repeated measurements of one point: every repetition in order, and their median and range. */
export interface Spread {
  reps: number[];
  median: number;
  min: number;
  max: number;
}

export function spreadOf(reps: readonly number[]): Spread {
  return {
    reps: [...reps],
    median: median(reps),
    min: reps.length ? Math.min(...reps) : NaN,
    max: reps.length ? Math.max(...reps) : NaN,
  };
}
