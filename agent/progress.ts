/**
 * Download progress for the CLI: a redrawn bar on a TTY (bytes, rate, ETA), a plain line every
 * 10 % otherwise, nothing in `--json` mode. Writes to stderr so stdout stays the command's output.
 */
import type { PullProgress } from "./pull.ts";

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

function formatDuration(s: number): string {
  if (!Number.isFinite(s)) return "--";
  if (s < 60) return `${Math.ceil(s)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.ceil(s % 60)).padStart(2, "0")}s`;
}

export interface ProgressReporter {
  update(p: PullProgress): void;
  done(): void;
}

export function progressReporter(
  label: string,
  mode: "tty" | "lines" | "off",
  out: NodeJS.WriteStream = process.stderr,
): ProgressReporter {
  if (mode === "off") return { update: () => undefined, done: () => undefined };
  const start = performance.now();
  let lastDraw = 0;
  let lastDecile = -1;
  let last: PullProgress | undefined;
  const line = (p: PullProgress): string => {
    const secs = (performance.now() - start) / 1000;
    const rate = secs > 0 ? p.bytes / secs : 0;
    const pct = p.total > 0 ? (100 * p.bytes) / p.total : 100;
    const eta = rate > 0 ? (p.total - p.bytes) / rate : Number.POSITIVE_INFINITY;
    return (
      `${pct.toFixed(0).padStart(3)}% ${formatBytes(p.bytes)}/${formatBytes(p.total)} ` +
      `${formatBytes(rate)}/s ETA ${formatDuration(eta)}`
    );
  };
  return {
    update(p) {
      last = p;
      if (mode === "tty") {
        const now = performance.now();
        if (now - lastDraw < 100 && p.bytes < p.total) return;
        lastDraw = now;
        const width = 24;
        const filled = p.total > 0 ? Math.round((width * p.bytes) / p.total) : width;
        const bar = "#".repeat(filled) + "-".repeat(width - filled);
        out.write(`\r${label} [${bar}] ${line(p)}\x1b[K`);
        return;
      }
      const decile = p.total > 0 ? Math.floor((10 * p.bytes) / p.total) : 10;
      if (decile === lastDecile) return;
      lastDecile = decile;
      out.write(`${label}: ${line(p)}\n`);
    },
    done() {
      if (mode === "tty" && last) out.write("\n");
    },
  };
}
