/**
 * Section 2, ceiling: a bare socket.io relay in the same three-process shape as our stack (Agent
 * client → Server → Computer client, each its own process), no A2C logic, base64 and binary
 * carriage, at every chunk size and window of the sweep. Our stack is judged against this.
 */
import { existsSync } from "node:fs";
import { resourcePath } from "../stack/harness.ts";
import { spawnChild, type Child } from "../lib/ipc.ts";
import { writeContent } from "../lib/data.ts";
import { withCosts, toPoint, type PointResult } from "../lib/measure.ts";
import { sizePoints, type SizePoint } from "../lib/points.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";
import type { DriveArgs } from "../procs/agent.ts";
import type { DriveResult } from "../lib/driver.ts";
import { SAMPLE_ENVELOPE } from "./micro.ts";
import { warmUp, WARM_UP_SIZES } from "../lib/warmup.ts";

export interface CeilingData {
  fileBytes: number;
  sizes: Record<"base64" | "binary", SizePoint[]>;
  points: PointResult[];
}

/** The sweep resource, shared by the ceiling, the sweep and the direct baseline. */
export function ensureSweepFile(ctx: Ctx): string {
  const path = resourcePath(ctx, "sweep.bin");
  if (!existsSync(path)) writeContent(path, "sweep", ctx.plan.sweepFileBytes);
  return path;
}

/** The bare relay's three processes, connected and serving `path`. */
export interface BareRelay {
  agent: Child;
  /** Every process with its role, for withCosts(). */
  procs: Array<{ role: string; child: Child }>;
  close(): Promise<void>;
}

/**
 * Starts the bare relay (server, Computer client, Agent client; each its own process) serving
 * `path` with a handle string of `handleLength` characters, so its JSON envelope costs what ours
 * does. The sweep starts its own to measure each of its points next to a ceiling point.
 */
export async function startBareRelay(path: string, handleLength: number): Promise<BareRelay> {
  const children: Child[] = [];
  const close = async (): Promise<void> => {
    for (const c of [...children].reverse()) await c.close();
  };
  try {
    // Fork the three processes at once (start-up dominates on a busy machine).
    const spawned = await Promise.allSettled([
      spawnChild("bare-server", "bench/procs/bare-server.ts"),
      spawnChild("bare-computer", "bench/procs/bare-computer.ts"),
      spawnChild("bare-agent", "bench/procs/agent.ts"),
    ]);
    for (const r of spawned) if (r.status === "fulfilled") children.push(r.value);
    for (const r of spawned) if (r.status === "rejected") throw r.reason;
    const [server, computer, agent] = children as [Child, Child, Child];
    const { url } = await server.call<{ url: string }>("start");
    await computer.call("start", { url, path, handleLength });
    await agent.call("bare-connect", { url });
    const procs = [
      { role: "agent", child: agent },
      { role: "server", child: server },
      { role: "computer", child: computer },
    ];
    return { agent, procs, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export async function runCeiling(ctx: Ctx): Promise<CeilingData> {
  const path = ensureSweepFile(ctx);
  const { plan } = ctx;
  const sizes = {
    base64: measurable(
      sizePoints(plan.chunkSizes, plan.maxHttpBufferSizes, "base64", SAMPLE_ENVELOPE),
    ),
    binary: measurable(
      sizePoints(plan.chunkSizes, plan.maxHttpBufferSizes, "binary", SAMPLE_ENVELOPE),
    ),
  };
  const points: PointResult[] = [];
  const start = (): Promise<BareRelay> => startBareRelay(path, SAMPLE_ENVELOPE.blob_handle.length);
  // A quick run measures every carriage on one relay, as the sweep does: the allocator history
  // that sets carriages apart moves speeds, which a quick run does not judge.
  const shared = plan.quick ? await start() : null;
  try {
    for (const carriage of plan.carriages) {
      // Fresh processes per carriage (as the sweep does on both sides): after big base64 chunks
      // read into fresh Buffers, glibc serves later binary chunks from memory it already holds,
      // without the page faults (14-20 µs each here) a process that never did so pays.
      const bare = shared ?? (await start());
      try {
        const { agent, procs } = bare;
        await warmUp(ctx, WARM_UP_SIZES, Infinity, (chunkBytes, window, durationMs) =>
          agent.call<DriveResult>("drive", {
            carrier: "bare",
            path,
            chunkBytes,
            window,
            durationMs,
            carriage,
          }),
        );
        for (const size of sizes[carriage]) {
          for (const window of plan.windows) {
            const args: DriveArgs = {
              carrier: "bare",
              path,
              chunkBytes: size.bytes,
              window,
              durationMs: plan.pointMs,
              carriage,
            };
            const { value, costs } = await withCosts(procs, () =>
              agent.call<DriveResult>("drive", args),
            );
            const p = toPoint(
              ctx.ledger,
              { carriage, chunkBytes: size.bytes, window },
              value,
              costs,
            );
            points.push(p);
            ctx.log(
              `ceiling ${carriage} ${formatBytes(size.bytes)} w${window}: ${p.mbps.toFixed(1)} MB/s`,
            );
          }
        }
      } finally {
        if (bare !== shared) await bare.close();
      }
    }
  } finally {
    await shared?.close();
  }
  return { fileBytes: plan.sweepFileBytes, sizes, points };
}

/** Sizes that fit at least one of the buffers (the others are never sent by anyone). */
function measurable(points: SizePoint[]): SizePoint[] {
  return points.filter((p) => Object.values(p.fits).some(Boolean));
}
