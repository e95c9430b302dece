/**
 * Section 8, the capacity model, computed from what this run measured (no new load):
 * - relay rate per Server core: MB/s the stack moved at a point divided by the Server process's
 *   CPU share at that point (a Node Server is one event loop, so one process per core);
 * - per-Agent demand: what one Agent pulls with the SDK defaults when nothing else limits it;
 * - memory per connected office from the many-Agents section;
 * - the cost of crossing the Redis bus from section twoNode: Server CPU per MB when Agent and
 *   Computer sit on different nodes vs one in-memory node, and redis-server CPU per MB, so the
 *   rows also say how many processes (and Redis cores) a load needs when every chunk crosses;
 * - recommended defaults: the smallest chunk and window within 90% of the best base64 point (small
 *   chunks keep ack latency, memory and the page-fault cliff down), with the evidence.
 */
import { SkipSection, type Ctx } from "../lib/context.ts";
import { formatBytes } from "../lib/stats.ts";
import type { ManyAgentsData } from "./many-agents.ts";
import type { SweepData, SweepPoint } from "./sweep.ts";
import type { TwoNodeData } from "./two-node.ts";

export interface CapacityRow {
  agents: number;
  demandMbps: number;
  totalMbps: number;
  serverCores: number;
  /** Server processes at 70% CPU each; nodes of 2 and 8 cores. */
  processes: number;
  nodes2: number;
  nodes8: number;
  /** When every chunk crosses nodes (Agent and Computer on different nodes); null: not measured. */
  processesCross: number | null;
  nodes2Cross: number | null;
  /** redis-server cores that traffic needs when it all crosses (Redis runs one core). */
  redisCores: number | null;
}

export interface CrossNodeCost {
  /** Server CPU per MB, Agent and Computer on two nodes (A + B) / one in-memory node. */
  serverCpuFactor: number;
  /** Server CPU per MB, one node of a Redis cluster / one in-memory node. */
  oneNodeFactor: number;
  redisCpuMsPerMb: number | null;
  perCoreCrossMbps: number;
  /** Median MB/s of one pull, cross-node / one Redis node / in-memory. */
  throughputCrossVsOne: number;
  throughputCrossVsMemory: number;
  source: string;
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
  /** From section twoNode (base64, one Agent); null when it did not run. */
  crossNode: CrossNodeCost | null;
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
  const demand = sdk?.medianMbps ?? rec.mbps;
  const rssPerOffice =
    many && many.rows.length > 0
      ? (many.rows[many.rows.length - 1]?.serverRssBytes ?? 0) / Math.max(1, many.totalOffices)
      : null;

  const crossNode = crossNodeCost(ctx, perCore);
  const rows: CapacityRow[] = [];
  for (const agents of [10, 100, 1000]) {
    for (const demandMbps of [1, 10, demand]) {
      const totalMbps = agents * demandMbps;
      const cores = totalMbps / perCore;
      const processes = Math.max(1, Math.ceil(cores / TARGET_UTILISATION));
      const processesCross = crossNode
        ? Math.max(1, Math.ceil(totalMbps / crossNode.perCoreCrossMbps / TARGET_UTILISATION))
        : null;
      rows.push({
        agents,
        demandMbps,
        totalMbps,
        serverCores: cores,
        processes,
        nodes2: Math.ceil(processes / 2),
        nodes8: Math.ceil(processes / 8),
        processesCross,
        nodes2Cross: processesCross === null ? null : Math.ceil(processesCross / 2),
        redisCores:
          crossNode?.redisCpuMsPerMb != null
            ? (totalMbps * crossNode.redisCpuMsPerMb) / 1000
            : null,
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
    crossNode,
    notes: [
      `Processes are sized at ${TARGET_UTILISATION * 100}% CPU each; one Server process per core (one event loop each). Per-Agent demand "${demand.toFixed(1)}" is what one Agent pulled with the SDK defaults in this run.`,
      crossNode
        ? `Several Server processes or nodes need the Redis adapter (issue 10). Measured in section twoNode: a chunk relayed between an Agent and a Computer on different nodes costs ${crossNode.serverCpuFactor.toFixed(2)}× the Server CPU per MB of one in-memory node (A and B together; one node of a Redis cluster with both on it: ${crossNode.oneNodeFactor.toFixed(2)}×)${crossNode.redisCpuMsPerMb !== null ? ` plus ${crossNode.redisCpuMsPerMb.toFixed(1)} ms of redis-server CPU per MB` : ""}. The "every chunk crosses" columns size for the worst placement; routing an office's Agent and Computers to the same node (sticky by office) keeps the first columns. Redis is one core: above ~0.7 Redis cores, shard (sharded Pub/Sub adapter, Redis Cluster) or keep offices on one node.`
        : "Several Server processes or nodes need the Redis adapter (issue 10); a chunk relayed between an Agent and a Computer on different nodes crosses the adapter bus (performance anchors A2), so route an office's Agent and Computers to the same node (sticky by office) or budget twice the traffic on Redis. (Section twoNode measures that cost; it did not run.)",
      "The Computer side scales with Computers, not with the Server: its per-chunk time is in the Computer-cost section.",
    ],
  };
}

/** The measured price of crossing nodes (section twoNode, base64, one Agent), or null. */
function crossNodeCost(ctx: Ctx, perCore: number): CrossNodeCost | null {
  const two =
    ctx.results.twoNode?.status === "done" ? (ctx.results.twoNode.data as TwoNodeData) : null;
  if (!two) return null;
  const at = (placement: string): TwoNodeData["points"][number] | undefined =>
    two.points.find((p) => p.placement === placement && p.carriage === "base64" && p.agents === 1);
  const [mem, one, cross] = [at("memory"), at("redisOne"), at("cross")];
  if (!mem || !one || !cross || !(mem.serverCpuMsPerMb > 0)) return null;
  const serverCpuFactor = cross.serverCpuMsPerMb / mem.serverCpuMsPerMb;
  return {
    serverCpuFactor,
    oneNodeFactor: one.serverCpuMsPerMb / mem.serverCpuMsPerMb,
    redisCpuMsPerMb: cross.redisCpuMsPerMb,
    perCoreCrossMbps: perCore / serverCpuFactor,
    throughputCrossVsOne: cross.medianMbps / one.medianMbps,
    throughputCrossVsMemory: cross.medianMbps / mem.medianMbps,
    source: `section twoNode, base64 SDK defaults, ${formatBytes(two.fileBytes)}, median of ${two.rounds} interleaved rounds: Server CPU ${mem.serverCpuMsPerMb.toFixed(1)} ms/MB in memory, ${one.serverCpuMsPerMb.toFixed(1)} on one Redis node, ${cross.serverCpuMsPerMb.toFixed(1)} across two nodes`,
  };
}
