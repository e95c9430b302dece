/** Report blocks of section 1 (micro). */
import type { MicroData } from "../sections/micro.ts";
import type { Block } from "./doc.ts";
import { dur, f1 } from "./format.ts";
import { microChart } from "./charts.ts";

export function microBlocks(d: MicroData): Block[] {
  const rows = d.rows.map((r) => [
    r.name,
    dur(r.meanMs),
    dur(r.p99Ms),
    `±${dur(r.moeMs)} (${r.rmePercent.toFixed(1)}%)`,
    String(r.samples),
    r.mbps === null ? "–" : f1(r.mbps),
  ]);
  return [
    {
      kind: "para",
      text: `tinybench, one operation in flight; the pool has ${d.poolThreads} threads (piscina, atomics default). Margin is the 95% confidence half-width of the mean.`,
    },
    { kind: "table", head: ["task", "mean", "p99", "margin", "samples", "MB/s"], rows },
    {
      kind: "chart",
      file: "micro.svg",
      alt: "sha256 and base64 MB/s by size, inline and in the worker pool",
      chart: microChart(d),
    },
  ];
}
