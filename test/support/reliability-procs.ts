/**
 * The Server and the Computer as their own processes (their shipped bins, scripts/launch/), with
 * every line they write to stdout/stderr kept (their production pino loggers), for the
 * reliability suite's fault and log checks and the soak.
 */
import { readFileSync } from "node:fs";
import { compileScript } from "../../scripts/launch/compile.ts";
import type { LaunchedProcess } from "../../scripts/launch/process.ts";
import {
  REPO_ROOT,
  startComputerProcess,
  startScript,
  startServerProcess,
} from "../../scripts/launch/roles.ts";

export const ROOT = REPO_ROOT;
export type Proc = LaunchedProcess;

/** How a process competes for CPU: a nice level (0 = as everyone) or SCHED_IDLE. */
export type CpuClass = number | "idle";

/**
 * The command prefix for a CPU class: with a nice level > 0 the process (every thread of it)
 * runs at that lower CPU priority; with `"idle"` under SCHED_IDLE, it gets only CPU time no normal
 * process wants, and a normal process that wakes takes the core from it at once (nice(1) /
 * chrt(1) exec node, so the pid is node's).
 */
export function cpuPrefix(cpu: CpuClass = 0): string[] {
  if (cpu === "idle") return ["chrt", "--idle", "0"];
  return cpu > 0 ? ["nice", "-n", String(cpu)] : [];
}

/** Logs at info unless a test asks otherwise: these checks read the processes' log lines. */
const LOGS = { A2C_LOG_LEVEL: "info" };

/** `--import` modules: scripts of this repo (instrumentation), compiled. */
function compiled(preload: string[] = []): Promise<string[]> {
  return Promise.all(preload.map((p) => compileScript(p)));
}

/** A script of this repo (a soak Agent, a load process), compiled, on plain node. */
export async function spawnScript(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  preload: string[] = [],
  cpu: CpuClass = 0,
): Promise<Proc> {
  return startScript(script, {
    args,
    env: { ...LOGS, ...env },
    preload: await compiled(preload),
    prefix: cpuPrefix(cpu),
  });
}

/** `a2c-server` on `port` (0 = any); resolves with its URL once it listens. */
export async function spawnServer(
  port: number,
  env: NodeJS.ProcessEnv,
  preload: string[] = [],
): Promise<{ proc: Proc; url: string }> {
  return startServerProcess({
    args: ["--port", String(port)],
    env: { ...LOGS, ...env },
    preload: await compiled(preload),
  });
}

/** `a2c-computer` with `--workers 0`; resolves once it started (not yet joined). */
export async function spawnComputerProc(args: {
  url: string;
  office: string;
  name: string;
  token: string;
  skills: string;
  stateDir: string;
  env?: NodeJS.ProcessEnv;
  extra?: string[];
  preload?: string[];
  cpu?: CpuClass;
}): Promise<Proc> {
  return startComputerProcess(
    {
      server: args.url,
      office: args.office,
      name: args.name,
      token: args.token,
      skills: args.skills,
      stateDir: args.stateDir,
      extra: ["--workers", "0", ...(args.extra ?? [])],
    },
    {
      env: { ...LOGS, ...args.env },
      preload: await compiled(args.preload),
      prefix: cpuPrefix(args.cpu),
    },
  );
}

/** Resident set size of `pid` in bytes (0 when gone). */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
