/**
 * The Server and the Computer as their own processes (`server/main.ts`, `computer/main.ts`), with
 * every byte they write to stdout/stderr kept (their production pino loggers), for the
 * reliability suite's fault, log and soak checks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { NODE_FLAGS } from "../../scripts/stack/nodes.ts";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface Proc {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first match of `re` in the output (rejects if the process exits first). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** How a process competes for CPU: a nice level (0 = as everyone) or SCHED_IDLE. */
export type CpuClass = number | "idle";

/**
 * `script` under tsx, with the Node flags `npm run server` / `npm run computer` use (NODE_FLAGS),
 * so the soak and fault checks run the processes as production does; `preload` modules (after tsx, so they may be TypeScript) load first. With
 * `cpu` a nice level > 0 the process (every thread of it) runs at that lower CPU priority; with
 * `"idle"` it runs under SCHED_IDLE: it gets only CPU time no normal process wants, and a normal
 * process that wakes takes the core from it at once (nice(1) / chrt(1) exec node, so the pid is
 * node's).
 */
export function spawnTs(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  preload: string[] = [],
  cpu: CpuClass = 0,
): Proc {
  const imports = [
    "--conditions=@a2c-smcp/source",
    "--import",
    "tsx",
    ...preload.flatMap((m) => ["--import", m]),
  ];
  const argv = [process.execPath, ...NODE_FLAGS, ...imports, join(ROOT, script), ...args];
  if (cpu === "idle") argv.unshift("chrt", "--idle", "0");
  else if (cpu > 0) argv.unshift("nice", "-n", String(cpu));
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: ROOT,
    env: { ...process.env, NODE_TEST_CONTEXT: "", A2C_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const onData = (b: Buffer): void => {
    out += b.toString("utf8");
    for (const w of [...waiters]) {
      const m = w.re.exec(out);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise<void>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r();
    else child.once("exit", () => r());
  });
  return {
    child,
    output: () => out,
    exited,
    waitFor: (re, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const m = re.exec(out);
        if (m) return resolve(m);
        const timer = setTimeout(
          () => reject(new Error(`no ${re} in ${timeoutMs} ms:\n${out.slice(-2000)}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (x) => {
            clearTimeout(timer);
            resolve(x);
          },
        });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`${script} exited before ${re}:\n${out.slice(-2000)}`));
        });
      }),
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** `server/main.ts` on `port` (0 = any); resolves with its URL once it listens. */
export async function spawnServer(
  port: number,
  env: NodeJS.ProcessEnv,
  preload: string[] = [],
): Promise<{ proc: Proc; url: string }> {
  const proc = spawnTs("server/main.ts", ["--port", String(port)], env, preload);
  const m = await proc.waitFor(/listening on (http:\/\/\S+)/);
  return { proc, url: m[1]! };
}

/** `computer/main.ts`; resolves once the process logged that it joined its office. */
export function spawnComputerProc(args: {
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
}): Proc {
  return spawnTs(
    "computer/main.ts",
    [
      "--server",
      args.url,
      "--office",
      args.office,
      "--name",
      args.name,
      "--token",
      args.token,
      "--skills",
      args.skills,
      "--state-dir",
      args.stateDir,
      "--workers",
      "0",
      ...(args.extra ?? []),
    ],
    args.env,
    args.preload,
    args.cpu,
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
