/**
 * The capacity model, computed from what this run measured (no new load). Every
 * figure of the Server side derives from one measurement, named in `source`:
 * - section twoNode when it ran: SDK-default pulls (whole reads, sha256-verified, warm Servers,
 *   interleaved rounds) on one in-memory Server, and the same pulls crossing two nodes over Redis;
 * - otherwise the chunk sweep's SDK-default reads (one in-memory Server; no crossing figures).
 * From that measurement: Server CPU ms per MB relayed (→ MB/s per core), per-Agent demand (one
 * Agent pulling unconstrained with the SDK defaults), the price of crossing nodes and Redis CPU per
 * MB. The limits a deployment hits besides CPU (network per node, one Redis core) are stated with
 * the assumption each extrapolation rests on. Section many Agents, when it ran, checks one
 * assumption (Server CPU per MB does not grow with the number of Agents).
 * Recommended defaults come from the raw sweep: the smallest chunk and window within 90% of the
 * best point (small chunks keep ack latency, memory and the page-fault cliff down).
 */
import { SkipSection, type Ctx, type SectionOutcome } from "../lib/context.ts";
import { formatBytes, median, type Spread } from "../lib/stats.ts";
import type { ManyAgentsData } from "./many-agents.ts";
import type { SweepData, SweepPoint } from "./sweep.ts";
import type { TwoNodeData, TwoNodePoint } from "./two-node.ts";

type Carriage = "base64" | "binary";

/** Share of a core each Server process is sized to (headroom for bursts and GC). */
export const TARGET_UTILISATION = 0.7;
/** The network interface assumed per Server node, Gbit/s each direction (full duplex). */
export const NIC_GBPS = 10;
/** Bytes on the wire per resource byte: base64 carries 4 characters per 3 bytes. */
export const WIRE_FACTOR: Record<Carriage, number> = { base64: 4 / 3, binary: 1 };
/** Node sizes the tables are given for (cores). */
export const NODE_CORES = [2, 8] as const;

/** What one in-memory Server spends per MB relayed, for one carriage. */
export interface ServerCost {
  carriage: Carriage;
  /** Median Server CPU ms per MB over the source's rounds, and every round. */
  msPerMb: number;
  rounds: Spread;
  /** 1000 / msPerMb: MB/s one fully busy Server core relays. */
  perCoreMbps: number;
  /** MB/s one Agent pulled with the SDK defaults in the same measurement. */
  demandMbps: number;
}

/** What one Server node carries, for one carriage and node size. */
export interface NodeCapacity {
  carriage: Carriage;
  cores: number;
  /** Cores × target utilisation × MB/s per core. */
  cpuMbps: number;
  /** The NIC's bytes per direction divided by the carriage's wire factor. */
  networkMbps: number;
  mbps: number;
  limit: "CPU" | "network";
}

export interface CrossNodeCost {
  /** Server CPU ms per MB, Agent and Computer on two nodes (A + B together). */
  msPerMb: number;
  /** msPerMb / the in-memory Server's. */
  serverCpuFactor: number;
  /** One node of a Redis cluster with Agent and Computer on it / in-memory. */
  oneNodeFactor: number;
  perCoreCrossMbps: number;
  redisCpuMsPerMb: number | null;
  /** Crossing MB/s one Redis core carries at the target utilisation; null: not measured. */
  redisCoreMbps: number | null;
  throughputCrossVsOne: number;
  throughputCrossVsMemory: number;
}

export interface CapacityRow {
  agents: number;
  demandMbps: number;
  totalMbps: number;
  /** Busy Server cores at the measured CPU per MB, and processes at the target utilisation. */
  serverCores: number;
  processes: number;
  /** Nodes per node size (NODE_CORES), each limited by CPU or network, whichever binds. */
  nodes: Record<string, number>;
  /** Network each node then moves per direction, Gbit/s (on the larger node size). */
  gbpsPerNode: number;
  /** When every chunk crosses nodes; null: section twoNode did not run. */
  processesCross: number | null;
  /** redis-server cores that traffic needs when it all crosses (one Redis runs on one core). */
  redisCores: number | null;
}

export interface CapacityData {
  carriage: Carriage;
  /** The one measurement the Server figures derive from. */
  source: { section: "twoNode" | "sweep"; text: string };
  serverCost: Record<Carriage, ServerCost | null>;
  /** Kept for readers of older reports: serverCost.base64.perCoreMbps and binary's. */
  perCoreMbps: number;
  perCoreBinaryMbps: number | null;
  perAgentDemandMbps: number;
  nodeCapacity: NodeCapacity[];
  crossNode: CrossNodeCost | null;
  /** Section many Agents: Server CPU ms per MB at each step (the concurrency check). */
  concurrency: Array<{ agents: number; msPerMb: number }> | null;
  rssPerOfficeBytes: number | null;
  recommended: Recommendation | null;
  recommendedBinary: Recommendation | null;
  rows: CapacityRow[];
  /** What every extrapolation above rests on, in words, with the figures it uses. */
  assumptions: string[];
  notes: string[];
}

export interface Recommendation {
  chunkBytes: number;
  window: number;
  mbps: number;
  bestMbps: number;
  p99Ms: number;
  source: string;
}

function done<T>(o: SectionOutcome | undefined): T | null {
  return o?.status === "done" ? (o.data as T) : null;
}

/** The smallest window, then the smallest chunk, within 90% of the best point of a carriage. */
function recommend(points: SweepPoint[], carriage: Carriage): Recommendation | null {
  if (points.length === 0) return null;
  const best = Math.max(...points.map((p) => p.mbps));
  const pick = points
    .filter((p) => p.mbps >= 0.9 * best)
    .sort((a, b) => a.chunkBytes - b.chunkBytes || a.window - b.window)[0];
  if (!pick) return null;
  return {
    chunkBytes: pick.chunkBytes,
    window: pick.window,
    mbps: pick.mbps,
    bestMbps: best,
    p99Ms: pick.p99Ms,
    source: `1 MB buffer sweep, ${carriage}, median of each point's repetitions: smallest chunk, then smallest window, within 90% of the best point`,
  };
}

function twoNodePoint(
  d: TwoNodeData,
  placement: TwoNodePoint["placement"],
  carriage: Carriage,
): TwoNodePoint | undefined {
  return d.points.find(
    (p) => p.placement === placement && p.carriage === carriage && p.agents === 1,
  );
}

function costFromTwoNode(d: TwoNodeData, carriage: Carriage): ServerCost | null {
  const p = twoNodePoint(d, "memory", carriage);
  if (!p || !(p.serverCpuMsPerMb > 0)) return null;
  return {
    carriage,
    msPerMb: p.serverCpuMsPerMb,
    rounds: p.serverCpuMsPerMbRounds,
    perCoreMbps: 1000 / p.serverCpuMsPerMb,
    demandMbps: p.medianMbps,
  };
}

function costFromSweep(d: SweepData, carriage: Carriage): ServerCost | null {
  const run = d.sdk.find((r) => r.carriage === carriage);
  const ms = run?.serverCpuMsPerMb;
  if (!run || !ms || !(ms.median > 0)) return null;
  return {
    carriage,
    msPerMb: ms.median,
    rounds: ms,
    perCoreMbps: 1000 / ms.median,
    demandMbps: run.medianMbps,
  };
}

function crossFromTwoNode(d: TwoNodeData, mem: ServerCost): CrossNodeCost | null {
  const one = twoNodePoint(d, "redisOne", mem.carriage);
  const cross = twoNodePoint(d, "cross", mem.carriage);
  if (!one || !cross || !(cross.serverCpuMsPerMb > 0)) return null;
  const redis = cross.redisCpuMsPerMb;
  return {
    msPerMb: cross.serverCpuMsPerMb,
    serverCpuFactor: cross.serverCpuMsPerMb / mem.msPerMb,
    oneNodeFactor: one.serverCpuMsPerMb / mem.msPerMb,
    perCoreCrossMbps: 1000 / cross.serverCpuMsPerMb,
    redisCpuMsPerMb: redis,
    redisCoreMbps: redis !== null && redis > 0 ? (TARGET_UTILISATION * 1000) / redis : null,
    throughputCrossVsOne: cross.medianMbps / one.medianMbps,
    throughputCrossVsMemory: cross.medianMbps / mem.demandMbps,
  };
}

export function nodeCapacity(cost: ServerCost, cores: number): NodeCapacity {
  const cpuMbps = cores * TARGET_UTILISATION * cost.perCoreMbps;
  const networkMbps = (NIC_GBPS * 125) / WIRE_FACTOR[cost.carriage];
  return {
    carriage: cost.carriage,
    cores,
    cpuMbps,
    networkMbps,
    mbps: Math.min(cpuMbps, networkMbps),
    limit: cpuMbps <= networkMbps ? "CPU" : "network",
  };
}

function rowsFor(cost: ServerCost, cross: CrossNodeCost | null): CapacityRow[] {
  const big = NODE_CORES[NODE_CORES.length - 1];
  const rows: CapacityRow[] = [];
  for (const agents of [10, 100, 1000]) {
    for (const demandMbps of [1, 10, cost.demandMbps]) {
      const totalMbps = agents * demandMbps;
      const serverCores = totalMbps / cost.perCoreMbps;
      const nodes = Object.fromEntries(
        NODE_CORES.map((c) => [String(c), Math.ceil(totalMbps / nodeCapacity(cost, c).mbps)]),
      );
      const bigNodes = nodes[String(big)] ?? 1;
      rows.push({
        agents,
        demandMbps,
        totalMbps,
        serverCores,
        processes: Math.max(1, Math.ceil(serverCores / TARGET_UTILISATION)),
        nodes,
        gbpsPerNode: (totalMbps * WIRE_FACTOR[cost.carriage] * 8) / 1000 / bigNodes,
        processesCross: cross
          ? Math.max(1, Math.ceil(totalMbps / cross.perCoreCrossMbps / TARGET_UTILISATION))
          : null,
        redisCores:
          cross?.redisCpuMsPerMb != null ? (totalMbps * cross.redisCpuMsPerMb) / 1000 : null,
      });
    }
  }
  return rows;
}

export async function runCapacity(ctx: Ctx): Promise<CapacityData> {
  const two = done<TwoNodeData>(ctx.results.twoNode);
  const sweep = done<SweepData>(ctx.results.sweep);
  const many = done<ManyAgentsData>(ctx.results.manyAgents);
  const fromTwo = two ? costFromTwoNode(two, "base64") : null;
  const useTwo = two !== null && fromTwo !== null;
  const cost = (c: Carriage): ServerCost | null =>
    useTwo ? costFromTwoNode(two, c) : sweep ? costFromSweep(sweep, c) : null;
  const base64 = cost("base64");
  if (!base64) {
    throw new SkipSection(
      "needs section twoNode or the chunk sweep (the Server's CPU per MB of SDK-default pulls); neither completed",
    );
  }
  const binary = cost("binary");
  const source = useTwo
    ? {
        section: "twoNode" as const,
        text: `section twoNode: one Agent pulling ${formatBytes(two.fileBytes)} with the SDK defaults (whole reads, each verified), warm Servers, ${two.rounds} interleaved rounds, medians; in-memory Server for the one-node figures, Agent on node A and Computer on node B for the crossing figures`,
      }
    : {
        section: "sweep" as const,
        text: `the chunk sweep's SDK-default reads (one Agent, whole reads, each verified; ${ctx.plan.sdkReads} interleaved reads, medians) on one in-memory Server; section twoNode did not run, so there are no crossing figures`,
      };
  if (!binary)
    source.text += "; this source measured no binary pulls, so there are no binary figures";
  const crossNode = useTwo ? crossFromTwoNode(two, base64) : null;
  const first = sweep?.buffers[0]?.points ?? [];
  const concurrency =
    many?.rows.map((r) => ({ agents: r.agents, msPerMb: r.serverCpuMsPerMb.median })) ?? null;
  const lastMany = many?.rows[many.rows.length - 1];
  const costs = [base64, binary].filter((c): c is ServerCost => c !== null);
  return {
    carriage: "base64",
    source,
    serverCost: { base64, binary },
    perCoreMbps: base64.perCoreMbps,
    perCoreBinaryMbps: binary?.perCoreMbps ?? null,
    perAgentDemandMbps: base64.demandMbps,
    nodeCapacity: costs.flatMap((c) => NODE_CORES.map((n) => nodeCapacity(c, n))),
    crossNode,
    concurrency,
    rssPerOfficeBytes:
      many && lastMany ? lastMany.serverRssBytes / Math.max(1, many.totalOffices) : null,
    recommended: recommend(
      first.filter((p) => p.carriage === "base64"),
      "base64",
    ),
    recommendedBinary: recommend(
      first.filter((p) => p.carriage === "binary"),
      "binary",
    ),
    rows: rowsFor(base64, crossNode),
    assumptions: assumptions(base64, crossNode, concurrency),
    notes: [],
  };
}

function assumptions(
  cost: ServerCost,
  cross: CrossNodeCost | null,
  concurrency: CapacityData["concurrency"],
): string[] {
  const ms = concurrency?.map((c) => c.msPerMb).filter(Number.isFinite) ?? [];
  return [
    `One Server process per core (one event loop each), sized to ${TARGET_UTILISATION * 100}% of it; MB/s per core = 1000 / the measured Server CPU ms per MB.`,
    ms.length > 0
      ? `Server CPU per MB does not grow with the number of Agents: in section many Agents it was ${Math.min(...ms).toFixed(1)}–${Math.max(...ms).toFixed(1)} ms/MB from ${concurrency?.[0]?.agents ?? 1} to ${concurrency?.[concurrency.length - 1]?.agents ?? 1} Agents at once (median ${median(ms).toFixed(1)}), against ${cost.msPerMb.toFixed(1)} ms/MB in the source measurement.`
      : "Server CPU per MB is taken not to grow with the number of Agents (section many Agents, which checks it, did not run).",
    `Processes and nodes add up linearly: nothing is shared between Server processes but the network and Redis, named below. Each relayed byte enters a Server node from a Computer and leaves it to an Agent, so a node needs its rate on the wire in each direction of a ${NIC_GBPS} Gbit/s full-duplex NIC: base64 chunks travel as 4/3 of the resource bytes, binary ones as about 1×. This run relayed over loopback, so the network limit is computed, not measured.`,
    cross
      ? `Redis runs commands on one core. Crossing chunks cost ${cross.redisCpuMsPerMb?.toFixed(2) ?? "?"} ms of redis-server CPU per MB, so one Redis carries about ${cross.redisCoreMbps?.toFixed(0) ?? "?"} MB/s of crossing traffic at ${TARGET_UTILISATION * 100}% of its core. Keep each office's Agent and Computers on one Server node (route by office): their chunks then never touch Redis (only one registry lookup per request, ${cross.oneNodeFactor.toFixed(2)}× the in-memory Server CPU per MB). Above that rate of crossing traffic, shard the bus (the Redis adapter's sharded Pub/Sub on a Redis Cluster).`
      : "Redis runs commands on one core; its cost per crossing MB is measured by section twoNode, which did not run: keep each office's Agent and Computers on one Server node so chunks never cross Redis.",
    `Every Agent of a row pulls at once, at the row's rate (peak load): 1 MB/s, 10 MB/s, or what one Agent pulled unconstrained with the SDK defaults in the source measurement (${cost.demandMbps.toFixed(1)} MB/s on this machine); the Computer side is not in the model (it scales with Computers; its per-chunk time is in the Computer-cost section).`,
    "CPU figures are this machine's (its CPU model and load average are in the header); on other hardware measure again.",
  ];
}
