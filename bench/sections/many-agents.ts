/**
 * Section 5, many Agents: 1, 4, 16, 64 Agents, each in its own office with its own Computer (the
 * protocol allows one Agent per office), all pulling at once with the SDK's default settings in
 * the spec's base64 mode (`binary: false`: the carriage of the capacity model's Server cost).
 * Aggregate verified MB/s, Server CPU and RSS, p99 chunk latency across every Agent.
 * One stack with the largest count is started once; each step uses the first N offices (the other
 * Agents and Computers stay connected and idle, which the Server's RSS includes).
 */
import type { ProcCost } from "../lib/ipc.ts";
import { writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import { medianCosts, withCosts } from "../lib/measure.ts";
import { percentile, mbPerSec, spreadOf, type Spread } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";
import type { SdkReadResult } from "../stack/agent-side.ts";
import { getHandle, resourcePath, startStack, type HandleInfo } from "../stack/harness.ts";

export interface ManyRow {
  agents: number;
  /** Median of `aggregate` (the rounds). */
  aggregateMbps: number;
  /** Aggregate MB/s of every round. */
  aggregate: Spread;
  perAgentMbps: { min: number; max: number };
  reads: number;
  p50Ms: number;
  p99Ms: number;
  /** Median over the rounds, % of one core. */
  serverCpuPercent: number;
  /** Server CPU % of one core, every round. */
  serverCpu: Spread;
  /** Server CPU ms per MB moved, every round. */
  serverCpuMsPerMb: Spread;
  serverRssBytes: number;
  costs: ProcCost[];
}

export interface ManyAgentsData {
  fileBytes: number;
  totalOffices: number;
  rows: ManyRow[];
  notes: string[];
}

export async function runManyAgents(ctx: Ctx): Promise<ManyAgentsData> {
  const { plan } = ctx;
  const max = Math.max(...plan.manyAgents);
  const size = plan.quick ? 2 * 1024 * 1024 : 8 * 1024 * 1024;
  const sha = writeContent(resourcePath(ctx, "many.bin"), "many", size);
  ctx.log(`many agents: starting ${max} offices…`);
  const procs = max >= 16 ? 2 : 1;
  const stack = await startStack(ctx, {
    maxHttpBufferSize: 1_000_000,
    offices: max,
    computerProcs: procs,
    agentProcs: procs,
    workers: 0,
  });
  try {
    const handles: HandleInfo[] = [];
    for (const seat of stack.seats) {
      const h = await getHandle(seat, "many.bin");
      if (h.sha256 !== sha)
        throw new IntegrityError(`Computer ${seat.computer} reported ${h.sha256} for many.bin`);
      handles.push(h);
    }
    interface Round {
      mbps: number;
      cpu: number;
      msPerMb: number;
      results: SdkReadResult[];
      costs: ProcCost[];
    }
    const rounds = new Map<number, Round[]>(plan.manyAgents.map((n) => [n, []]));
    for (let round = 0; round < plan.manyAgentsReps; round++) {
      for (const n of plan.manyAgents) {
        const seats = stack.seats.slice(0, n);
        const t0 = performance.now();
        const { value: results, costs } = await withCosts(stack.procs, () =>
          Promise.all(
            seats.map((seat, i) =>
              seat.child.call<SdkReadResult>("sdk-read", {
                agent: seat.index,
                handle: handles[i]!.handle,
                sha256: sha,
                totalSize: size,
                durationMs: plan.manyAgentsMs,
                options: { binary: false },
                raw: true,
              }),
            ),
          ),
        );
        const seconds = (performance.now() - t0) / 1000;
        const bytes = results.reduce((s, r) => s + r.bytes, 0);
        for (const r of results) ctx.ledger.add(r.requests, r.bytes, r.reads);
        const cpu = costs.find((c) => c.name === "server")?.cpuPercent ?? NaN;
        const mbps = mbPerSec(bytes, seconds);
        rounds.get(n)!.push({ mbps, cpu, msPerMb: (cpu * 10) / mbps, results, costs });
        ctx.log(
          `many agents ${n} (round ${round + 1}, base64): ${mbps.toFixed(1)} MB/s aggregate, server CPU ${cpu.toFixed(0)}%`,
        );
      }
    }
    const rows = plan.manyAgents.map((n): ManyRow => {
      const rs = rounds.get(n)!;
      const all = rs.flatMap((r) => r.results);
      const samples = all.flatMap((r) => r.samples ?? []).sort((a, b) => a - b);
      const costs = medianCosts(rs.map((r) => r.costs));
      const server = costs.find((c) => c.name === "server");
      const aggregate = spreadOf(rs.map((r) => r.mbps));
      return {
        agents: n,
        aggregateMbps: aggregate.median,
        aggregate,
        perAgentMbps: {
          min: Math.min(...all.map((r) => r.mbps)),
          max: Math.max(...all.map((r) => r.mbps)),
        },
        reads: all.reduce((s, r) => s + r.reads, 0),
        p50Ms: percentile(samples, 50),
        p99Ms: percentile(samples, 99),
        serverCpuPercent: server?.cpuPercent ?? NaN,
        serverCpu: spreadOf(rs.map((r) => r.cpu)),
        serverCpuMsPerMb: spreadOf(rs.map((r) => r.msPerMb)),
        serverRssBytes: rs[rs.length - 1]?.costs.find((c) => c.name === "server")?.rssBytes ?? NaN,
        costs,
      };
    });
    return {
      fileBytes: size,
      totalOffices: max,
      rows,
      notes: [
        `${plan.manyAgentsReps} rounds over the steps (1 → ${max} Agents, then again); each step runs at least ${plan.manyAgentsMs} ms and until every Agent finished a whole read; the table shows medians over the rounds, the chart their range.`,
        `${max} offices (one Computer and one Agent each) stay connected throughout; ${procs} Computer process(es) and ${procs} Agent process(es); the Agents run the SDK's readBlob with default settings, each whole read verified by sha256.`,
        "The Computers here hash inline (`workers: 0`): each hashes the resource once before the measurement, and 64 piscina pools would only add threads to a 2-core machine.",
      ],
    };
  } finally {
    await stack.close();
  }
}
