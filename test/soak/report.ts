/** The soak's report.md and rss.svg (figures from test/soak/main.ts and analyze.ts). */
import type { HopRow, LatencyResult, ProcRow } from "./analyze.ts";

export interface RssRow {
  first: number;
  last: number;
  max: number;
  ok: boolean;
}
export interface SoakReport {
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

export function svg(samples: { t: number; rss: Record<string, number> }[], keys: string[]): string {
  const W = 900;
  const H = 340;
  const maxT = Math.max(1, ...samples.map((s) => s.t));
  const maxR = Math.max(1, ...samples.flatMap((s) => keys.map((k) => s.rss[k] ?? 0)));
  const colors = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"];
  const lines = keys.map((k, i) => {
    const c = colors[i % colors.length];
    const pts = samples
      .map(
        (s) =>
          `${((s.t / maxT) * (W - 60) + 50).toFixed(1)},${(H - 30 - ((s.rss[k] ?? 0) / maxR) * (H - 70)).toFixed(1)}`,
      )
      .join(" ");
    const x = 60 + (i % 6) * 140;
    const y = 15 + Math.floor(i / 6) * 15;
    return `<polyline fill="none" stroke="${c}" points="${pts}"/><text x="${x}" y="${y}" fill="${c}">${k}</text>`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">
<text x="5" y="${H / 2}">RSS</text><text x="${W / 2}" y="${H - 5}">seconds (max ${maxT.toFixed(0)}; RSS max ${(maxR / 1e6).toFixed(0)} MB)</text>
<line x1="50" y1="${H - 30}" x2="${W - 10}" y2="${H - 30}" stroke="#888"/><line x1="50" y1="40" x2="50" y2="${H - 30}" stroke="#888"/>
${lines.join("\n")}
</svg>
`;
}

const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : "–");

export function markdown(r: SoakReport): string {
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  const L = r.latency_ms;
  return [
    `# Soak report (${r.minutes} min) — ${r.ok ? "PASS" : "FAIL"}`,
    "",
    `Traffic: \`${JSON.stringify(r.counts)}\``,
    "",
    "## Probe chunk latency (64 KiB base64 chunks, one at a time, own Agent process and office)",
    "",
    `Quiet phases (no load activity overlapping the request) vs loaded phases, interleaved: p99 ${f1(L.quiet_p99)} ms → ${f1(L.loaded_p99)} ms, ratio **${L.ratio.toFixed(2)}** (goal ≤ 2: ${L.ratio <= 2 ? "met" : "NOT MET"}); p50 ${f1(L.quiet_p50)} → ${f1(L.loaded_p50)} ms; samples quiet ${L.samples.quiet}, loaded ${L.samples.loaded}, skipped ${L.samples.skipped} (warm-up, or quiet but overlapping load still draining). Per-cycle ratios: ${L.cycle_ratios.map((x) => x.toFixed(2)).join(", ")}.`,
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
