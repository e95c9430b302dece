/**
 * Download progress for the CLI, on stderr so stdout stays the command's output: a redrawn bar
 * on a TTY (bytes, rate, ETA), a plain line every 10 % otherwise, nothing with `--json` or
 * `--quiet`. `end()` finishes the bar's line, so whatever is printed next starts on its own;
 * `downloadSummary` is the final line of a download (with the carriage the chunks used).
 */
import type { Carriage, PullProgress, PullStats } from "./pull.ts";

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v.toFixed(0) : v.toFixed(1)} ${UNITS[u]}`;
}

/** An ETA: `42s`, `3m07s`, `--` when unknown. */
function formatEta(s: number): string {
  if (!Number.isFinite(s)) return "--";
  const whole = Math.ceil(s);
  if (whole < 60) return `${whole}s`;
  return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, "0")}s`;
}

/** An elapsed time: `0.42 s`, `12.3 s`, `3 min 07 s`. */
export function formatSeconds(s: number): string {
  if (s < 10) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const whole = Math.round(s);
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, "0")} s`;
}

/** A rate in decimal megabytes a second, as network tools print it. */
export function formatRate(bytes: number, seconds: number): string {
  return `${(bytes / 1e6 / Math.max(seconds, 1e-6)).toFixed(1)} MB/s`;
}

export type ProgressMode = "tty" | "lines" | "off";

export interface ProgressReporter {
  /** The latest numbers; called for every chunk, so it only records them (and the decile). */
  update(p: PullProgress): void;
  /** Ends the bar's line (a no-op when nothing was drawn or it already ended). */
  end(): void;
}

/** How often the TTY bar is redrawn. */
const REDRAW_MS = 100;
const BAR_WIDTH = 24;

/**
 * A reporter for one download. Drawing happens off the pull's path: the bar on a timer every
 * 100 ms (and once more at 100 %), the plain lines when the tens digit of the percentage changes.
 */
export function progressReporter(
  label: string,
  mode: ProgressMode,
  out: NodeJS.WritableStream = process.stderr,
): ProgressReporter {
  if (mode === "off") return { update: () => undefined, end: () => undefined };
  const start = performance.now();
  let latest: PullProgress | undefined;
  let lastDecile = -1;
  let open = false; // a bar is drawn and its line not ended
  let timer: NodeJS.Timeout | undefined;
  const line = (p: PullProgress): string => {
    const secs = (performance.now() - start) / 1000;
    const rate = secs > 0 ? p.bytes / secs : 0; // bytes a second, for the ETA
    const pct = p.total > 0 ? (100 * p.bytes) / p.total : 100;
    const eta = rate > 0 ? (p.total - p.bytes) / rate : Number.POSITIVE_INFINITY;
    return (
      `${pct.toFixed(0).padStart(3)}% ${formatBytes(p.bytes)}/${formatBytes(p.total)} ` +
      `${formatRate(p.bytes, secs)} ETA ${formatEta(eta)}`
    );
  };
  const draw = (): void => {
    const p = latest;
    if (!p) return;
    const filled = p.total > 0 ? Math.round((BAR_WIDTH * p.bytes) / p.total) : BAR_WIDTH;
    const bar = "#".repeat(filled) + "-".repeat(BAR_WIDTH - filled);
    out.write(`\r${label} [${bar}] ${line(p)}\x1b[K`);
    open = true;
  };
  const stopTimer = (): void => {
    clearInterval(timer);
    timer = undefined;
  };
  return {
    update(p) {
      if (mode === "tty") {
        latest = p;
        if (p.bytes >= p.total) {
          stopTimer();
          draw();
        } else timer ??= setInterval(draw, REDRAW_MS).unref();
        return;
      }
      const decile = p.total > 0 ? Math.floor((10 * p.bytes) / p.total) : 10;
      if (decile === lastDecile) return;
      lastDecile = decile;
      out.write(`${label}: ${line(p)}\n`);
    },
    end() {
      stopTimer();
      if (!open) return;
      open = false;
      out.write("\n");
    },
  };
}

export interface DownloadSummary {
  file: string;
  size: number;
  sha256: string;
  seconds: number;
  /** How the chunks travelled; null when the bytes came from the cache. */
  carriage: Carriage | null;
  stats?: PullStats;
}

/** `1 busy, 2 timeouts, 1 resume`: what slowed the pull down, when anything did. */
function setbacks(s: PullStats | undefined): string {
  if (!s) return "";
  const parts: string[] = [];
  const add = (n: number, one: string, many: string): void => {
    if (n > 0) parts.push(`${n} ${n === 1 ? one : many}`);
  };
  add(s.busy, "busy", "busy");
  add(s.timeouts, "timeout", "timeouts");
  add(s.resumes, "resume", "resumes");
  add(s.restarts, "restart", "restarts");
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

/**
 * `wrote /x/y.bin: 1.0 MiB (1048576 bytes), sha256 <hex> verified, binary carriage, 0.21 s,
 * 5.0 MB/s, rtt 3 ms`; `..., from the cache, ...` instead of the carriage for a cache hit;
 * `..., resumed from 20.7 MiB, ...` after a resume, whose rate counts only the bytes it moved;
 * what slowed the pull down in parentheses at the end, when anything did.
 */
export function downloadSummary(d: DownloadSummary): string {
  const source =
    d.carriage === null ? "from the cache" : `${d.carriage} carriage${codingWords(d.stats)}`;
  const from = d.stats?.resumedFrom ?? 0;
  const resumed = from > 0 ? `, resumed from ${formatBytes(from)}` : "";
  const rtt = d.stats && d.stats.rttMs > 0 ? `, rtt ${formatMs(d.stats.rttMs)}` : "";
  return (
    `wrote ${d.file}: ${formatBytes(d.size)} (${d.size} bytes), sha256 ${d.sha256} verified, ` +
    `${source}${resumed}, ${formatSeconds(d.seconds)}, ${formatRate(d.size - from, d.seconds)}` +
    rtt +
    setbacks(d.stats)
  );
}

/**
 * `, br (120 of 123 chunks), 0.24 wire bytes per byte`: the content-codings the chunks came in
 * (D63), most used first, and the bytes `blob` carried per resource byte received.
 */
function codingWords(s: PullStats | undefined): string {
  if (!s || s.bytesReceived === 0) return "";
  const all = Object.values(s.codings).reduce((a, b) => a + b, 0);
  const used = Object.entries(s.codings).sort((a, b) => b[1] - a[1]);
  const named = used
    .map(([coding, n]) => (n === all ? coding : `${coding} (${n} of ${all} chunks)`))
    .join(", ");
  return `, ${named}, ${(s.wireBytes / s.bytesReceived).toFixed(2)} wire bytes per byte`;
}

/** A round trip: `0.4 ms`, `12 ms`, `1.2 s`. */
function formatMs(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}
