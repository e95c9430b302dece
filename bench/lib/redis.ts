/**
 * A `redis-server` for the bench (section twoNode), started with the stack launcher's own code
 * (scripts/stack/nodes.ts: loopback, free port, temp dir, no persistence, PING readiness), and
 * its CPU time read from /proc so the report can show what the Redis bus costs.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { ChildSet } from "../../scripts/stack/children.ts";
import { startRedis } from "../../scripts/stack/nodes.ts";

export interface BenchRedis {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Whether `redis-server` is an executable on PATH. */
export function hasRedisServer(): boolean {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, "redis-server"), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

export async function startBenchRedis(dir: string): Promise<BenchRedis> {
  const set = new ChildSet(dir);
  try {
    const r = await startRedis(set, join(dir, "data"), Date.now() + 20_000);
    return { url: r.url, pid: r.child.pid, stop: () => set.stopAll() };
  } catch (err) {
    await set.stopAll();
    throw err;
  }
}

let ticks: number | null = null;
function clockTicks(): number {
  if (ticks === null) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** CPU time (user + system) of process `pid` in ms, or null where /proc is not readable. */
export function procCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at index 2 (state).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / clockTicks();
  } catch {
    return null;
  }
}
