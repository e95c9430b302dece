/** Assembles the whole report (blocks for Markdown and HTML) from the run's results. */
import type { SectionId, SectionOutcome } from "../lib/context.ts";
import type { CeilingData } from "../sections/ceiling.ts";
import type { DirectData } from "../sections/direct.ts";
import type { MicroData } from "../sections/micro.ts";
import type { SweepData } from "../sections/sweep.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";
import { microBlocks } from "./build-micro.ts";
import { ceilingBlocks, directBlocks, sweepBlocks } from "./build-transfer.ts";
import { otherBlocks } from "./build-other.ts";
import type { Report } from "./types.ts";

export const SECTION_TITLES: Record<SectionId, string> = {
  micro: "1. Micro: primitives (tinybench)",
  ceiling: "2. Ceiling: bare socket.io relay",
  sweep: "3. Chunk sweep: our stack",
  direct: "4. Direct baseline: HTTP Range on loopback",
  manyAgents: "5. Many Agents",
  rewrites: "6. Consistency under rewrites",
  computerCost: "Computer cost: per-chunk time by resource size, event loop while hashing",
  http: "7. HTTP surface (autocannon)",
  twoNode: "Two Server nodes over Redis: what crossing the bus costs",
  capacity: "8. Capacity model and recommended defaults",
};

function data<T>(o: SectionOutcome | undefined): T | null {
  return o?.status === "done" ? (o.data as T) : null;
}

export function buildBlocks(report: Report): Block[] {
  const m = report.meta;
  const s = report.sections;
  const blocks: Block[] = [
    { kind: "heading", level: 1, text: m.title },
    {
      kind: "para",
      text: `${m.quick ? "QUICK smoke run (correctness only; numbers are not meaningful)" : "Full run"}, ${m.startedAt} → ${m.finishedAt}. Node ${m.node}, ${m.cpus} × ${m.cpuModel}, ${m.totalMemGiB} GiB RAM, kernel ${m.kernel}; bufferutil ${m.bufferutil ? "loaded" : "absent"}; ${m.mallocTunables ? `every bench process (both sides of every comparison) runs with GLIBC_TUNABLES=${m.mallocTunables} (fixed malloc thresholds, bench/lib/ipc.ts says why)` : "glibc malloc defaults"}; node flags of every bench process: ${m.nodeFlags && m.nodeFlags.length > 0 ? m.nodeFlags.join(" ") : "none"} (as npm run server / computer run). Load average at start ${m.loadAvgStart.map((x) => x.toFixed(2)).join(" ")}, at end ${m.loadAvgEnd.map((x) => x.toFixed(2)).join(" ")} (the machine is shared: treat single numbers as ranges, ±30–50% per the performance anchors).`,
    },
    {
      kind: "para",
      text: `Integrity: ${report.integrity.verifiedChunks} chunks / ${formatBytes(report.integrity.verifiedBytes)} / ${report.integrity.verifiedResources} whole resources verified by sha256; ${report.integrity.failures.length} failures. Result: ${report.ok ? "PASS" : "FAIL"}.`,
    },
    { kind: "heading", level: 2, text: "Goals" },
    {
      kind: "table",
      head: ["goal", "status", "measured", "evidence"],
      rows: report.goals.map((g) => [
        g.text,
        g.status === "met" ? "MET" : g.status === "missed" ? "MISSED" : "NOT MEASURED",
        g.measured,
        g.evidence,
      ]),
    },
  ];
  const missed = report.goals.filter((g) => g.why);
  if (missed.length > 0) {
    blocks.push({
      kind: "heading",
      level: 3,
      text: "Closing note: missed or unmeasured goals, why, and what would fix them",
    });
    blocks.push({ kind: "list", items: missed.map((g) => `${g.text}: ${g.why ?? ""}`) });
  }
  if (report.integrity.failures.length > 0) {
    blocks.push({ kind: "heading", level: 2, text: "INTEGRITY FAILURES" });
    blocks.push({ kind: "list", items: report.integrity.failures });
  }
  const windows = m.plan.windows;
  const ceiling = data<CeilingData>(s.ceiling);
  const sweep = data<SweepData>(s.sweep);
  const order: SectionId[] = [
    "micro",
    "ceiling",
    "sweep",
    "direct",
    "manyAgents",
    "rewrites",
    "computerCost",
    "http",
    "twoNode",
    "capacity",
  ];
  for (const id of order) {
    const o = s[id];
    if (!o) continue;
    blocks.push({ kind: "heading", level: 2, text: SECTION_TITLES[id] });
    if (o.status === "skipped") {
      blocks.push({ kind: "para", text: `Skipped: ${o.reason}` });
      continue;
    }
    if (o.status === "failed") {
      blocks.push({
        kind: "para",
        text: `FAILED${o.integrity ? " (INTEGRITY)" : ""} after ${o.seconds.toFixed(1)} s: ${o.error}`,
      });
      continue;
    }
    switch (id) {
      case "micro":
        blocks.push(...microBlocks(o.data as MicroData));
        break;
      case "ceiling":
        blocks.push(...ceilingBlocks(o.data as CeilingData, windows));
        break;
      case "sweep":
        blocks.push(...sweepBlocks(o.data as SweepData, ceiling, windows));
        break;
      case "direct":
        blocks.push(...directBlocks(o.data as DirectData, sweep, windows));
        break;
      default:
        blocks.push(...otherBlocks(id, o.data, report));
    }
    if (o.notes.length > 0) blocks.push({ kind: "list", items: o.notes });
    blocks.push({ kind: "para", text: `Section time: ${o.seconds.toFixed(1)} s.` });
  }
  blocks.push({ kind: "heading", level: 2, text: "How to reproduce" });
  blocks.push({
    kind: "para",
    text: "`npm run bench` (about 10 minutes on 2 cores) or `npm run bench -- --quick` (1–2 minutes, CI). Options: `--out DIR`, `--only micro,ceiling,...,twoNode` (twoNode needs `redis-server` on PATH). Raw numbers of every point are in report.json.",
  });
  return blocks;
}
