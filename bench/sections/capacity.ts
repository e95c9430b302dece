/**
 * Section 8, the capacity model, computed from what this run measured (no new load):
 * - relay rate per Server core: MB/s the stack moved at a point divided by the Server process's
 *   CPU share at that point (a Node Server is one event loop, so one process per core);
 * - per-Agent demand: what one Agent pulls with the SDK defaults when nothing else limits it;
 * - memory per connected office from the many-Agents section;
 * - recommended defaults: the smallest chunk and window within 90% of the best base64 point (small
 *   chunks keep ack latency, memory and the page-fault cliff down), with the evidence.
 */
import { SkipSection, type Ctx } from "../lib/context.ts";
import { formatBytes } from "../lib/stats.ts";
import type { ManyAgentsData } from "./many-agents.ts";
import type { SweepData, SweepPoint } from "./sweep.ts";

export interface CapacityRow {
  agents: number;
  demandMbps: number;
  totalMbps: number;
  serverCores: number;
  /** Server processes at 70% CPU each; nodes of 2 and 8 cores. */
  processes: number;
  nodes2: number;
  nodes8: number;
}

export interface CapacityData {
  carriage: "base64" | "binary";
  /** Measured relay MB/s per Server core, with where it came from. */
  perCoreMbps: number;
  perCoreSource: string;
  perCoreBinaryMbps: number | null;
  perAgentDemandMbps: number;
  rssPerOfficeBytes: number | null;
  recommended: {
    chunkBytes: number;
    window: number;
    mbps: number;
    bestMbps: number;
    p99Ms: number;
    source: string;
  };
  recommendedBinary: {
    chunkBytes: number;
    window: number;
    mbps: number;
    bestMbps: number;
    p99Ms: number;
  } | null;
  rows: CapacityRow[];
  notes: string[];
}

const TARGET_UTILISATION = 0.7;

function serverCpu(p: SweepPoint): number {
  return (p.costs.find((c) => c.name === "server")?.cpuPercent ?? NaN) / 100;
}

/** The smallest window, then the smallest chunk, within 90% of the best point of a carriage. */
function recommend(
  points: SweepPoint[],
): { chunkBytes: number; window: number; mbps: number; bestMbps: number; p99Ms: number } | null {
  if (points.length === 0) return null;
  const best = Math.max(...points.map((p) => p.mbps));
  const good = points
    .filter((p) => p.mbps >= 0.9 * best)
    .sort((a, b) => a.chunkBytes - b.chunkBytes || a.window - b.window);
  const pick = good[0];
  if (!pick) return null;
  return {
    chunkBytes: pick.chunkBytes,
    window: pick.window,
    mbps: pick.mbps,
    bestMbps: best,
    p99Ms: pick.p99Ms,
  };
}

export async function runCapacity(ctx: Ctx): Promise<CapacityData> {
  const sweep = ctx.results.sweep?.status === "done" ? (ctx.results.sweep.data as SweepData) : null;
  if (!sweep) throw new SkipSection("needs the chunk sweep (section 3), which did not complete");
  const many =
    ctx.results.manyAgents?.status === "done"
      ? (ctx.results.manyAgents.data as ManyAgentsData)
      : null;
  const first = sweep.buffers[0]?.points ?? [];
  const base64 = first.filter((p) => p.carriage === "base64");
  const binary = first.filter((p) => p.carriage === "binary");
  const rec = recommend(base64);
  if (!rec) throw new SkipSection("no base64 sweep points");
  const recBin = recommend(binary);

  // Per-core rate: the heaviest many-Agents step when there is one (the Server busiest), else the
  // recommended sweep point.
  let perCore: number;
  let source: string;
  const heavy = many?.rows.reduce((a, b) => (b.aggregateMbps > a.aggregateMbps ? b : a));
  if (heavy && heavy.serverCpuPercent > 5) {
    perCore = heavy.aggregateMbps / (heavy.serverCpuPercent / 100);
    source = `many-Agents step with ${heavy.agents} Agents: ${heavy.aggregateMbps.toFixed(1)} MB/s at ${heavy.serverCpuPercent.toFixed(0)}% Server CPU`;
  } else {
    const p = base64.find((x) => x.chunkBytes === rec.chunkBytes && x.window === rec.window)!;
    perCore = p.mbps / serverCpu(p);
    source = `sweep point base64 ${formatBytes(p.chunkBytes)} w${p.window}: ${p.mbps.toFixed(1)} MB/s at ${(100 * serverCpu(p)).toFixed(0)}% Server CPU`;
  }
  const binPoint = recBin
    ? binary.find((x) => x.chunkBytes === recBin.chunkBytes && x.window === recBin.window)
    : undefined;
  const perCoreBinary = binPoint ? binPoint.mbps / serverCpu(binPoint) : null;
  const sdk = sweep.sdk.find((s) => s.carriage === "base64");
  const demand = sdk?.result.mbps ?? rec.mbps;
  const rssPerOffice =
    many && many.rows.length > 0
      ? (many.rows[many.rows.length - 1]?.serverRssBytes ?? 0) / Math.max(1, many.totalOffices)
      : null;

  const rows: CapacityRow[] = [];
  for (const agents of [10, 100, 1000]) {
    for (const demandMbps of [1, 10, demand]) {
      const totalMbps = agents * demandMbps;
      const cores = totalMbps / perCore;
      const processes = Math.max(1, Math.ceil(cores / TARGET_UTILISATION));
      rows.push({
        agents,
        demandMbps,
        totalMbps,
        serverCores: cores,
        processes,
        nodes2: Math.ceil(processes / 2),
        nodes8: Math.ceil(processes / 8),
      });
    }
  }
  return {
    carriage: "base64",
    perCoreMbps: perCore,
    perCoreSource: source,
    perCoreBinaryMbps: perCoreBinary,
    perAgentDemandMbps: demand,
    rssPerOfficeBytes: rssPerOffice,
    recommended: {
      ...rec,
      source:
        "1 MB buffer sweep, base64: smallest chunk, then smallest window, within 90% of the best point",
    },
    recommendedBinary: recBin,
    rows,
    notes: [
      `Processes are sized at ${TARGET_UTILISATION * 100}% CPU each; one Server process per core (one event loop each). Per-Agent demand "${demand.toFixed(1)}" is what one Agent pulled with the SDK defaults in this run.`,
      "Several Server processes or nodes need the Redis adapter (issue 10); a chunk relayed between an Agent and a Computer on different nodes crosses the adapter bus (performance anchors A2), so route an office's Agent and Computers to the same node (sticky by office) or budget twice the traffic on Redis.",
      "The Computer side scales with Computers, not with the Server: its per-chunk time is in the Computer-cost section.",
    ],
  };
}
