/** The soak's report.md and rss.svg (figures from test/soak/main.ts and analyze.ts). */
import type { HopRow, LatencyResult, ProcRow } from "./analyze.ts";
import { renderSvg } from "../../bench/report/vega.ts";
import { LOADED_P99_MAX_MS } from "./goals.ts";

export interface RssRow {
  first: number;
  last: number;
  max: number;
  ok: boolean;
}
export interface SoakReport {
  /** When the run started (ISO) and the checkout's commit (bench/lib/git.ts); absent before 2026-12-05. */
  startedAt?: string;
  commit?: string | null;
  minutes: number;
  bounds: Record<string, string>;
  counts: Record<string, number>;
  latency_ms: LatencyResult & { goal: string };
  hops: HopRow[];
  procs: ProcRow[];
  rss: Record<string, RssRow>;
  fds: { start: Record<string, number>; end: Record<string, number> };
  failures: string[];
  verdicts: string[];
  ok: boolean;
}

/** The RSS of every process over the run, one line each (Vega-Lite, rendered to SVG in Node). */
export async function svg(
  samples: { t: number; rss: Record<string, number> }[],
  keys: string[],
): Promise<string> {
  const values = samples.flatMap((s) =>
    keys.map((k) => ({ t: s.t, process: k, mb: (s.rss[k] ?? 0) / 1e6 })),
  );
  return renderSvg(
    {
      title: "RSS of every process over the soak",
      width: 760,
      height: 300,
      data: { values },
      mark: { type: "line", strokeWidth: 1.5 },
      encoding: {
        x: { field: "t", type: "quantitative", title: "seconds since the start" },
        y: { field: "mb", type: "quantitative", title: "RSS, MB" },
        color: {
          field: "process",
          type: "nominal",
          title: null,
          sort: keys,
          scale: { scheme: "tableau20" },
          legend: { columns: 6 },
        },
      },
    },
    "rss",
  );
}

const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : "–");

export function markdown(r: SoakReport): string {
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  const L = r.latency_ms;
  return [
    `# Soak report (${r.minutes} min) — ${r.ok ? "PASS" : "FAIL"}`,
    "",
    ...(r.startedAt
      ? [
          `Started ${r.startedAt.slice(0, 16).replace("T", " ")} UTC${r.commit ? `, commit ${r.commit}` : ""}.`,
          "",
        ]
      : []),
    `Traffic: \`${JSON.stringify(r.counts)}\``,
    "",
    "## Probe chunk latency (64 KiB base64 chunks, one at a time, own Agent process and office)",
    "",
    `Loaded phases: p99 **${f1(L.loaded_p99)} ms** (goal ≤ ${LOADED_P99_MAX_MS} ms: ${L.loaded_p99 <= LOADED_P99_MAX_MS ? "met" : "NOT MET"}); beside it, quiet phases (no load activity overlapping the request), interleaved: p99 ${f1(L.quiet_p99)} ms, ratio ${L.ratio.toFixed(2)} (not judged); p50 ${f1(L.quiet_p50)} → ${f1(L.loaded_p50)} ms; samples quiet ${L.samples.quiet}, loaded ${L.samples.loaded}, skipped ${L.samples.skipped} (warm-up, or quiet but overlapping load still draining). Per-cycle ratios: ${L.cycle_ratios.map((x) => x.toFixed(2)).join(", ")}.`,
    "",
    "### Where the probe's time goes (ms; tail = mean over the slowest 1% of the phase)",
    "",
    "| segment | quiet p50 | loaded p50 | quiet tail | loaded tail |",
    "| --- | --- | --- | --- | --- |",
    ...r.hops.map(
      (h) =>
        `| ${h.segment} | ${f1(h.quiet_p50)} | ${f1(h.loaded_p50)} | ${f1(h.quiet_tail)} | ${f1(h.loaded_tail)} |`,
    ),
    "",
    "### Processes (median event-loop delay p99 per second, ms beyond the 5 ms sampling tick; CPU, run-queue wait and GC pauses in % of one core / of wall time; longest GC pause in ms)",
    "",
    "| process | ELD p99 quiet | ELD p99 loaded | CPU quiet | CPU loaded | wait quiet | wait loaded | GC quiet | GC loaded | GC max loaded | handles first → last quiet |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...r.procs.map(
      (p) =>
        `| ${p.role} | ${f1(p.quiet.eld_p99)} | ${f1(p.loaded.eld_p99)} | ${f1(p.quiet.cpu_pct)} | ${f1(p.loaded.cpu_pct)} | ${f1(p.quiet.wait_pct)} | ${f1(p.loaded.wait_pct)} | ${f1(p.quiet.gc_pct)} | ${f1(p.loaded.gc_pct)} | ${f1(p.loaded.gc_max)} | ${p.handles.first} → ${p.handles.last} |`,
    ),
    "",
    "## Memory and descriptors",
    "",
    "| process | RSS first quarter (MB) | RSS last quarter (MB) | max (MB) | fds start | fds end | ok |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...Object.entries(r.rss).map(
      ([k, v]) =>
        `| ${k} | ${mb(v.first)} | ${mb(v.last)} | ${mb(v.max)} | ${r.fds.start[k]} | ${r.fds.end[k]} | ${v.ok ? "yes" : "NO"} |`,
    ),
    "",
    `Bounds: ${Object.entries(r.bounds)
      .map(([k, v]) => `${k} ${v}`)
      .join("; ")}.`,
    "",
    "![RSS](rss.svg)",
    "",
    r.failures.length
      ? `Failures (first 50):\n${r.failures.map((v) => `- ${v}`).join("\n")}\n`
      : "",
    r.verdicts.length
      ? `Verdicts:\n${r.verdicts.map((v) => `- ${v}`).join("\n")}`
      : "No violations.",
    "",
  ].join("\n");
}
