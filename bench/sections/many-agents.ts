/**
 * Section 5, many Agents: 1, 4, 16, 64 Agents, each in its own office with its own Computer (the
 * protocol allows one Agent per office), all pulling at once with the SDK's default settings.
 * Aggregate verified MB/s, Server CPU and RSS, p99 chunk latency across every Agent.
 * One stack with the largest count is started once; each step uses the first N offices (the other
 * Agents and Computers stay connected and idle, which the Server's RSS includes).
 */
import type { ProcCost } from "../lib/ipc.ts";
import { writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import { withCosts } from "../lib/measure.ts";
import { percentile, mbPerSec } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";
import type { SdkReadResult } from "../stack/agent-side.ts";
import { getHandle, resourcePath, startStack, type HandleInfo } from "../stack/harness.ts";

export interface ManyRow {
  agents: number;
  aggregateMbps: number;
  perAgentMbps: { min: number; max: number };
  reads: number;
  p50Ms: number;
  p99Ms: number;
  serverCpuPercent: number;
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
    const rows: ManyRow[] = [];
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
              options: {},
              raw: true,
            }),
          ),
        ),
      );
      const seconds = (performance.now() - t0) / 1000;
      const bytes = results.reduce((s, r) => s + r.bytes, 0);
      const samples = results.flatMap((r) => r.samples ?? []).sort((a, b) => a - b);
      for (const r of results) ctx.ledger.add(r.requests, r.bytes, r.reads);
      const server = costs.find((c) => c.name === "server");
      const row: ManyRow = {
        agents: n,
        aggregateMbps: mbPerSec(bytes, seconds),
        perAgentMbps: {
          min: Math.min(...results.map((r) => r.mbps)),
          max: Math.max(...results.map((r) => r.mbps)),
        },
        reads: results.reduce((s, r) => s + r.reads, 0),
        p50Ms: percentile(samples, 50),
        p99Ms: percentile(samples, 99),
        serverCpuPercent: server?.cpuPercent ?? NaN,
        serverRssBytes: server?.rssBytes ?? NaN,
        costs,
      };
      rows.push(row);
      ctx.log(
        `many agents ${n}: ${row.aggregateMbps.toFixed(1)} MB/s aggregate, server CPU ${row.serverCpuPercent.toFixed(0)}%, p99 ${row.p99Ms.toFixed(0)} ms`,
      );
    }
    return {
      fileBytes: size,
      totalOffices: max,
      rows,
      notes: [
        `${max} offices (one Computer and one Agent each) stay connected throughout; ${procs} Computer process(es) and ${procs} Agent process(es); the Agents run the SDK's readBlob with default settings, each whole read verified by sha256.`,
        "The Computers here hash inline (`workers: 0`): each hashes the resource once before the measurement, and 64 piscina pools would only add threads to a 2-core machine.",
      ],
    };
  } finally {
    await stack.close();
  }
}
