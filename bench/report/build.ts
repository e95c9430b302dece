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
import { capacityBlocks, capacitySizingBlocks } from "./build-capacity.ts";
import { otherBlocks } from "./build-other.ts";
import type { CapacityData } from "../sections/capacity.ts";
import type { LinksData } from "../sections/links.ts";
import { linkSizingBlocks, linksBlocks } from "./build-links.ts";
import type { PathsData } from "../sections/paths.ts";
import { pathsBlocks } from "./build-paths.ts";
import type { CodecsData } from "../sections/codecs.ts";
import { codecsBlocks } from "./build-codecs.ts";
import { keyFigures } from "./key-figures.ts";
import type { Report } from "./types.ts";

export const SECTION_TITLES: Record<SectionId, string> = {
  micro: "1. Micro: primitives (tinybench)",
  ceiling: "2. Ceiling: bare socket.io relay",
  sweep: "3. Chunk sweep: our stack",
  direct: "4. Direct baseline: HTTP Range on loopback",
  userView: "User view: the CLI to a file and the SDK into memory, both carriages",
  upload: "Uploads: client:put_blob beside the download of the same file",
  manyAgents: "5. Many Agents",
  rewrites: "6. Consistency under rewrites",
  computerCost: "Computer cost: per-chunk time by resource size, event loop while hashing",
  http: "7. HTTP surface (autocannon)",
  twoNode: "Two Server nodes over Redis: what crossing the bus costs",
  transport: "Stock transport: what each departure from the libraries buys",
  capacity: "Capacity model and recommended settings",
  links: "Real links: shaped uplinks and downlinks",
  paths: "Long paths: round trips, a rate step, a latecomer, long answers",
  codecs: "Content-codings: ratio and CPU per MB on the text corpus",
};

function data<T>(o: SectionOutcome | undefined): T | null {
  return o?.status === "done" ? (o.data as T) : null;
}

/** The order of the sections in the report, after the summary, the goals and the run. */
const ORDER: SectionId[] = [
  "capacity",
  "micro",
  "ceiling",
  "sweep",
  "direct",
  "userView",
  "upload",
  "manyAgents",
  "rewrites",
  "computerCost",
  "http",
  "twoNode",
  "links",
  "paths",
  "transport",
  "codecs",
];

function sectionBlocks(report: Report, id: SectionId, o: SectionOutcome): Block[] {
  const windows = report.meta.plan.windows;
  const blocks: Block[] = [{ kind: "heading", level: 2, text: SECTION_TITLES[id] }];
  if (o.status === "skipped") return [...blocks, { kind: "para", text: `Skipped: ${o.reason}` }];
  if (o.status === "failed") {
    return [
      ...blocks,
      {
        kind: "para",
        text: `FAILED${o.integrity ? " (INTEGRITY)" : ""} after ${o.seconds.toFixed(1)} s: ${o.error}`,
      },
    ];
  }
  switch (id) {
    case "micro":
      blocks.push(...microBlocks(o.data as MicroData));
      break;
    case "ceiling":
      blocks.push(...ceilingBlocks(o.data as CeilingData, windows));
      break;
    case "sweep":
      blocks.push(...sweepBlocks(o.data as SweepData, windows, report.meta.plan.pointReps));
      break;
    case "direct":
      blocks.push(
        ...directBlocks(o.data as DirectData, data<SweepData>(report.sections.sweep), windows),
      );
      break;
    case "capacity":
      blocks.push(...capacityBlocks(o.data as CapacityData));
      break;
    case "links":
      blocks.push(...linksBlocks(o.data as LinksData));
      break;
    case "paths":
      blocks.push(...pathsBlocks(o.data as PathsData));
      break;
    case "codecs":
      blocks.push(...codecsBlocks(o.data as CodecsData));
      break;
    default:
      blocks.push(...otherBlocks(id, o.data, report));
  }
  if (o.notes.length > 0) blocks.push({ kind: "list", items: o.notes });
  if (o.seconds >= 0.1)
    blocks.push({ kind: "para", text: `Section time: ${o.seconds.toFixed(1)} s.` });
  return blocks;
}

/** The kernel's huge-page mode, and whether the bench's processes asked glibc for huge pages. */
function hugePageWords(m: Report["meta"]): string {
  if (!m.hugePages) return "transparent huge pages: not reported";
  const asked = /glibc\.malloc\.hugetlb=[12]/.test(m.mallocTunables ?? "");
  const how =
    m.hugePages !== "madvise"
      ? ""
      : asked
        ? ", asked for by every bench process (glibc.malloc.hugetlb)"
        : ", asked for by no bench process";
  return `transparent huge pages: ${m.hugePages}${how}`;
}

const STATUS_WORD = { met: "MET", missed: "MISSED", "not measured": "NOT MEASURED" } as const;

/** The charts a planner needs first: what one user gets, and what many Agents get of one Server. */
const KEY_CHARTS = ["user-view.svg", "many-agents.svg"];

/**
 * Takes the key charts out of their sections (in the order of KEY_CHARTS), leaving a line that
 * says where they went: a chart is drawn once per page.
 */
function liftKeyCharts(sections: Block[][]): Block[] {
  const lifted: Block[] = [];
  for (const file of KEY_CHARTS) {
    for (const blocks of sections) {
      const i = blocks.findIndex((b) => b.kind === "chart" && b.file === file);
      if (i < 0) continue;
      lifted.push(blocks[i]!);
      blocks[i] = { kind: "para", text: "Its chart is in the summary at the top." };
    }
  }
  return lifted;
}

/** One line: when, which commit, on what machine, how loaded (the full machine line is below). */
function runLine(report: Report): string {
  const m = report.meta;
  const when = `${m.startedAt.slice(0, 16).replace("T", " ")} → ${m.finishedAt.slice(11, 16)} UTC`;
  const what = m.quick
    ? "QUICK smoke run (correctness only; numbers are not meaningful)"
    : "full run";
  const load = (xs: number[]): string => (xs[0] ?? 0).toFixed(1);
  return `${when}, ${what}${m.commit ? ` at commit ${m.commit}` : ""}, on ${m.cpus} × ${m.cpuModel} with ${m.totalMemGiB} GiB RAM; load average ${load(m.loadAvgStart)} at the start, ${load(m.loadAvgEnd)} at the end. Figures are this machine's; ratios compare points measured side by side.`;
}

/**
 * The report: first what a planner reads in a minute (verdict, key figures, the key charts, the
 * sizing tables), then the goals with their evidence, the run's machine, and every section.
 */
export function buildBlocks(report: Report): Block[] {
  const m = report.meta;
  const s = report.sections;
  const ran = ORDER.flatMap((id) => {
    const o = s[id];
    return o ? [sectionBlocks(report, id, o)] : [];
  });
  const charts = liftKeyCharts(ran);
  const capacity = data<CapacityData>(s.capacity);
  const links = data<LinksData>(s.links);
  const figures = keyFigures(report).filter((f) => f.value !== null);
  const blocks: Block[] = [
    { kind: "heading", level: 1, text: m.title },
    { kind: "verdict", status: report.verdict.status, text: report.verdict.detail },
    { kind: "para", text: runLine(report) },
    { kind: "heading", level: 2, text: "Summary" },
    {
      kind: "table",
      head: ["figure", "this run"],
      rows: figures.map((f) => [f.figure, f.value ?? ""]),
    },
    ...charts,
    ...(capacity ? capacitySizingBlocks(capacity) : []),
    ...(links ? linkSizingBlocks(links) : []),
    { kind: "contents" },
    { kind: "heading", level: 2, text: "Goals" },
    {
      kind: "table",
      head: ["goal", "status", "measured", "evidence"],
      rows: report.goals.map((g) => [g.text, STATUS_WORD[g.status], g.measured, g.evidence]),
    },
  ];
  const missed = report.goals.filter((g) => g.why);
  if (missed.length > 0) {
    blocks.push({
      kind: "heading",
      level: 3,
      text: "Missed or unmeasured goals: why, and what would fix them",
    });
    blocks.push({ kind: "list", items: missed.map((g) => `${g.text}: ${g.why ?? ""}`) });
  }
  if (report.integrity.failures.length > 0) {
    blocks.push({ kind: "heading", level: 2, text: "INTEGRITY FAILURES" });
    blocks.push({ kind: "list", items: report.integrity.failures });
  }
  blocks.push(
    { kind: "heading", level: 2, text: "The run" },
    {
      kind: "para",
      text: `${m.quick ? "QUICK smoke run (correctness only; numbers are not meaningful)" : "Full run"}, ${m.startedAt} → ${m.finishedAt}${m.commit ? `, commit ${m.commit}` : ""}. Node ${m.node}, ${m.cpus} × ${m.cpuModel}, ${m.totalMemGiB} GiB RAM, kernel ${m.kernel}; bufferutil ${m.bufferutil ? "loaded" : "absent"}; ${m.mallocTunables ? `every bench process (both sides of every comparison) runs with GLIBC_TUNABLES=${m.mallocTunables} (fixed malloc thresholds, bench/lib/ipc.ts says why)` : "glibc malloc defaults"}; ${hugePageWords(m)}; node flags of every bench process: ${m.nodeFlags && m.nodeFlags.length > 0 ? m.nodeFlags.join(" ") : "none"} (as npm run server / computer run). Load average at start ${m.loadAvgStart.map((x) => x.toFixed(2)).join(" ")}, at end ${m.loadAvgEnd.map((x) => x.toFixed(2)).join(" ")} (the machine is shared: treat single numbers as ranges, ±30–50% per point; the charts draw the range of every repeated point).`,
    },
    {
      kind: "para",
      text: `Integrity: ${report.integrity.verifiedChunks} chunks / ${formatBytes(report.integrity.verifiedBytes)} / ${report.integrity.verifiedResources} whole resources verified by sha256; ${report.integrity.failures.length} failures.`,
    },
  );
  for (const section of ran) blocks.push(...section);
  const notRun = ORDER.filter((id) => !s[id]);
  if (notRun.length > 0) {
    blocks.push({
      kind: "para",
      text: `Not run (\`--only\`): ${notRun.map((id) => SECTION_TITLES[id]).join("; ")}.`,
    });
  }
  blocks.push({ kind: "heading", level: 2, text: "How to read this report" });
  blocks.push({
    kind: "list",
    items: [
      "The verdict says whether the run is sound (FAIL: a section failed or a byte did not match its sha256) and what it showed: PASS when every goal was measured and met, MISSED when one was missed, PARTIAL when some goals were not measured (a run with `--only`, or a skipped section).",
      "MB/s counts verified resource bytes (10^6 bytes per second), whatever the carriage; base64 chunks put 4/3 of that on the wire.",
      "Repeated points are drawn as their median with a vertical bar from the lowest to the highest repetition; the tables give every repetition. Compare series inside one chart (measured side by side), not numbers across runs.",
      "The bare socket.io relay is the same three-process transport with none of our work: our stack's ratio to it, measured next to each point, is what the ceiling goals judge.",
      "The capacity model derives every Server figure from one named measurement and states what each extrapolation assumes; the CPU figures are this machine's.",
    ],
  });
  blocks.push({ kind: "heading", level: 2, text: "How to reproduce" });
  blocks.push({
    kind: "para",
    text: "`npm run bench` (about 40 minutes on 2 cores, 17 of them before the links section) or `npm run bench -- --quick` (1–2 minutes, CI). Options: `--out DIR`, `--only micro,ceiling,...,twoNode,links` (twoNode needs `redis-server` on PATH; links needs root and iproute2), `--baseline DIR` (the links section runs another built checkout's roles beside ours). Raw numbers of every point and repetition are in report.json; bench/README.md says how to read the report.",
  });
  return blocks;
}
