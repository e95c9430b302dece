/**
 * Parent ↔ child request/answer over Node's IPC channel. The bench measures processes in the shape
 * a deployment has them (Agent, Server and Computer in separate processes), so every load generator
 * and every relay runs in a child; the parent only orchestrates, collects and writes the report.
 *
 * The channel is scripts/launch/ipc.ts. Every bench child answers the built-in `stats` command (CPU time, RSS, event-loop delay), so the parent
 * can report each process's cost for exactly the window of one data point.
 */
import type { ChildProcess } from "node:child_process";
import type { IntervalHistogram } from "node:perf_hooks";
import {
  Child as IpcChild,
  serve as serveIpc,
  type Handler,
  type Msg,
} from "../../scripts/launch/ipc.ts";
import { NODE_FLAGS, startScript } from "../../scripts/launch/roles.ts";
import { ELD_RESOLUTION_MS, startEldMonitor, summarizeEld, type EldSummary } from "./eld.ts";
import { IntegrityError } from "./integrity.ts";

export type { Handler };

/** What the built-in `stats` command answers. */
export interface ProcStats {
  pid: number;
  /** process.cpuUsage() user + system, in microseconds since the process started. */
  cpuMicros: number;
  /** Wall clock (performance.now) in ms, to turn CPU deltas into a percentage. */
  wallMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  /**
   * Event-loop delay since the last `eld-reset`, in ms beyond the monitor's sampling interval
   * (eld.ts says why), with the raw interval p99/max alongside.
   */
  eld: EldSummary;
}

let histogram: IntervalHistogram | null = null;

function eventLoopDelay(): ProcStats["eld"] {
  return summarizeEld(histogram ?? { percentile: () => 0, max: 0, count: 0 }, ELD_RESOLUTION_MS);
}

export function procStats(): ProcStats {
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  return {
    pid: process.pid,
    cpuMicros: cpu.user + cpu.system,
    wallMs: performance.now(),
    rssBytes: mem.rss,
    heapUsedBytes: mem.heapUsed,
    eld: eventLoopDelay(),
  };
}

/**
 * Child side: answers the parent's commands with `handlers` plus `stats` and `eld-reset`, then
 * announces readiness (scripts/launch/ipc.ts).
 */
export function serve(handlers: Record<string, Handler>): void {
  histogram = startEldMonitor(ELD_RESOLUTION_MS);
  serveIpc({
    stats: async () => procStats(),
    "eld-reset": async () => {
      histogram?.reset();
      return null;
    },
    ...handlers,
  });
}

/** Parent side handle on one bench child: its cost (`stats`), an IntegrityError rebuilt as one. */
export class Child extends IpcChild {
  constructor(name: string, proc: ChildProcess) {
    super(name, proc, { IntegrityError });
  }

  stats(): Promise<ProcStats> {
    return this.call<ProcStats>("stats");
  }
}

/**
 * glibc malloc settings of every process the bench starts, ours and the bare relay's alike
 * (`A2C_BENCH_MALLOC=default` leaves glibc's own). By default glibc serves a big Buffer (> 128 KiB,
 * a threshold it raises as such blocks are freed) from fresh mmap'd memory, and gives freed heap
 * memory back to the kernel once more than twice that threshold is free at the top of the heap;
 * each fresh page then costs a page fault, 14–20 µs on this VM. Which process ends up in that
 * churn depends on its allocation history, not on its code: the same process measured 4–150
 * faults per MB at 512 KiB chunks from one minute to the next (2026-12-03), moving its MB/s by 2×
 * either way, on either side of a comparison. Fixed thresholds take the churn away from both
 * sides (the bare relay's 512 KiB binary chunks went 202 → 298 MB/s, ours 100 → 183), so a ratio
 * compares code, not allocator luck. Operators can set the same (docs/configuration.md).
 */
export const BENCH_MALLOC_TUNABLES =
  "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728";

/** The environment that applies `BENCH_MALLOC_TUNABLES` (empty with `A2C_BENCH_MALLOC=default`). */
export function mallocEnv(): Record<string, string> {
  if (process.env.A2C_BENCH_MALLOC === "default") return {};
  const own = process.env.GLIBC_TUNABLES;
  return { GLIBC_TUNABLES: own ? `${own}:${BENCH_MALLOC_TUNABLES}` : BENCH_MALLOC_TUNABLES };
}

/**
 * Node flags of every process the bench starts, ours and the bare relay's alike: the ones of the
 * roles' bins (scripts/launch/roles.ts `NODE_FLAGS` says why).
 * `A2C_BENCH_NODE_FLAGS=default` leaves V8's defaults.
 */
export function benchNodeFlags(): string[] {
  return process.env.A2C_BENCH_NODE_FLAGS === "default" ? [] : [...NODE_FLAGS];
}

/**
 * Starts `script` (a path from the repository root) compiled, on plain node, with an IPC channel
 * (scripts/launch/roles.ts): the roles it hosts are the packages' shipped build, as an
 * application embedding them loads it. Resolves once the child announced `ready`.
 */
export async function spawnChild(
  name: string,
  script: string,
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<Child> {
  const launched = await startScript(script, {
    name,
    ipc: true,
    // A2C_BENCH_EXEC_ARGV adds Node flags to every child (e.g. `--cpu-prof --cpu-prof-dir=DIR`
    // to profile each process of a point: NODE_OPTIONS refuses --cpu-prof).
    nodeFlags: [
      ...benchNodeFlags(),
      ...(process.env.A2C_BENCH_EXEC_ARGV ?? "").split(" ").filter(Boolean),
    ],
    env: {
      A2C_LOG_LEVEL: process.env.A2C_LOG_LEVEL ?? "silent",
      ...mallocEnv(),
      ...env,
    },
    keepBytes: 64 * 1024,
  });
  const proc = launched.child;
  const child = new Child(name, proc);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`${name} did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.on("message", (msg: Msg) => {
      if (msg.kind === "ready") {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${String(code)} before it was ready`));
    });
  });
  return child;
}

/** CPU % (of one core) and RSS of a process between two `stats` snapshots. */
export interface ProcCost {
  name: string;
  cpuPercent: number;
  rssBytes: number;
}

export function costBetween(name: string, a: ProcStats, b: ProcStats): ProcCost {
  const wall = b.wallMs - a.wallMs;
  const cpuMs = (b.cpuMicros - a.cpuMicros) / 1000;
  return { name, cpuPercent: wall > 0 ? (100 * cpuMs) / wall : 0, rssBytes: b.rssBytes };
}
