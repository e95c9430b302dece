/** Report blocks of section 1 (micro). */
import type { MicroData } from "../sections/micro.ts";
import type { Block } from "./doc.ts";
import { dur, f1 } from "./format.ts";
import { lineChart } from "./svg.ts";
import { formatBytes } from "../lib/stats.ts";

export function microBlocks(d: MicroData): Block[] {
  const rows = d.rows.map((r) => [
    r.name,
    dur(r.meanMs),
    dur(r.p99Ms),
    `±${dur(r.moeMs)} (${r.rmePercent.toFixed(1)}%)`,
    String(r.samples),
    r.mbps === null ? "–" : f1(r.mbps),
  ]);
  const series = (prefix: string): Array<{ x: number; y: number }> =>
    d.rows
      .filter((r) => r.name.startsWith(prefix) && r.bytes !== null && r.mbps !== null)
      .map((r) => ({ x: r.bytes ?? 0, y: r.mbps ?? 0 }));
  const chart = lineChart({
    title: "sha256 and base64: inline vs piscina pool (1 task in flight)",
    xLabel: "bytes per operation",
    yLabel: "MB/s",
    logX: true,
    xFormat: formatBytes,
    series: [
      { name: "sha256 inline", points: series("sha256 inline") },
      { name: "sha256 pool (clone)", points: series("sha256 pool (clone)") },
      { name: "sha256 pool (SAB)", points: series("sha256 pool (SharedArrayBuffer)") },
      { name: "base64 inline", points: series("base64 inline") },
      { name: "base64 pool", points: series("base64 pool") },
      { name: "base64 decode inline", points: series("base64 decode inline") },
    ],
  });
  return [
    {
      kind: "para",
      text: `tinybench, one operation in flight; the pool has ${d.poolThreads} threads (piscina, atomics default). Margin is the 95% confidence half-width of the mean.`,
    },
    { kind: "table", head: ["task", "mean", "p99", "margin", "samples", "MB/s"], rows },
    { kind: "chart", file: "micro.svg", alt: "micro primitives MB/s by size", svg: chart },
  ];
}
