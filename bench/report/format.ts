/** Number formatting shared by the report builders. */
export const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : "–");
export const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : "–");
export const pct = (n: number): string => (Number.isFinite(n) ? `${(100 * n).toFixed(1)}%` : "–");
export const ms = (n: number): string =>
  Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n.toFixed(2)) : "–";
/** Latencies in a table: whole ms from 100 up, else one decimal. */
export const latencyMs = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
export const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(0)} MiB`;
/** Micro-benchmark times: µs below 1 ms. */
export const dur = (msValue: number): string =>
  msValue < 1 ? `${(msValue * 1000).toFixed(2)} µs` : `${msValue.toFixed(3)} ms`;
