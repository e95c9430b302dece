/**
 * Section 4, direct baseline: the same file over plain HTTP Range requests on loopback (two
 * processes: the range server and the Agent-side driver), same chunk sizes and windows. It is what a
 * user would get if the Computer were reachable directly; it bounds what any relay can add.
 */
import { spawnChild, type Child } from "../lib/ipc.ts";
import {
  combineReps,
  withCosts,
  toPoint,
  type PointResult,
  type RepeatedPoint,
} from "../lib/measure.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";
import type { DriveArgs } from "../procs/agent.ts";
import type { DriveResult } from "../lib/driver.ts";
import { ensureSweepFile } from "./ceiling.ts";
import type { CeilingData } from "./ceiling.ts";

export interface DirectData {
  points: RepeatedPoint[];
}

export async function runDirect(ctx: Ctx): Promise<DirectData> {
  const path = ensureSweepFile(ctx);
  const ceiling =
    ctx.results.ceiling?.status === "done" ? (ctx.results.ceiling.data as CeilingData) : null;
  // Same sizes as the ceiling's base64 row when it ran; otherwise the plan's sizes.
  const sizes = ceiling ? ceiling.sizes.base64.map((s) => s.bytes) : ctx.plan.chunkSizes;
  const children: Child[] = [];
  try {
    const server = await spawnChild("range-server", "bench/procs/http-range-server.ts");
    children.push(server);
    const { url } = await server.call<{ url: string }>("start", { path });
    const agent = await spawnChild("range-agent", "bench/procs/agent.ts");
    children.push(agent);
    await agent.call("http-setup", { url });
    const procs = [
      { role: "agent", child: agent },
      { role: "server", child: server },
    ];
    const points: RepeatedPoint[] = [];
    for (const chunkBytes of sizes) {
      for (const window of ctx.plan.windows) {
        const args: DriveArgs = {
          carrier: "http",
          path,
          chunkBytes,
          window,
          durationMs: ctx.plan.repMs,
          carriage: "binary",
        };
        const reps: PointResult[] = [];
        for (let rep = 0; rep < ctx.plan.pointReps; rep++) {
          const { value, costs } = await withCosts(procs, () =>
            agent.call<DriveResult>("drive", args),
          );
          reps.push(toPoint(ctx.ledger, { carriage: "binary", chunkBytes, window }, value, costs));
        }
        const p = combineReps(reps);
        points.push(p);
        ctx.log(
          `direct ${formatBytes(chunkBytes)} w${window}: ${p.mbps.toFixed(1)} MB/s (${p.spread.reps.map((x) => x.toFixed(0)).join("/")})`,
        );
      }
    }
    return { points };
  } finally {
    for (const c of children.reverse()) await c.close();
  }
}
