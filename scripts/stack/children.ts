/**
 * The child processes of the stack (and of tests that start several), each the leader of its own
 * process group (scripts/launch/process.ts says why), its output appended to `<logDir>/<name>.log`.
 * Nothing is left behind on a normal exit, a failed scenario, SIGINT or SIGTERM: `stopAll` stops
 * the groups in reverse start order.
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { groupAlive, launch, waitGroupGone, type LaunchedProcess } from "../launch/process.ts";
import { startRole, startScript, type Role, type StartSpec } from "../launch/roles.ts";

export interface ChildSpec {
  /** Short label used in logs and error messages (e.g. `server`, `computer-1`, `agent-2`). */
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Open an IPC channel (scripted Agents report progress through it). */
  ipc?: boolean;
  /** Called with each complete output line, after it was written to the log file. */
  onLine?: (line: string) => void;
}

export interface ManagedChild {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or 128 + signal number) when the leader exits. */
  readonly exited: Promise<number>;
  /** The last lines the child wrote (stdout and stderr), for failure reports. */
  tail(): string[];
  /**
   * Sends `signal` to its group, SIGKILL after `graceMs` if anything is left; resolves with the
   * leader's exit status once the group is gone.
   */
  stop(signal: NodeJS.Signals, graceMs: number): Promise<number>;
}

function managed(proc: LaunchedProcess, logFile: string): ManagedChild {
  return {
    name: proc.name,
    process: proc.child,
    pid: proc.pid,
    logFile,
    exited: proc.exited.then((e) => e.status),
    tail: () => proc.tail(),
    stop: (signal, graceMs) => proc.stop(signal, graceMs).then((e) => e.status),
  };
}

export class ChildSet {
  readonly #children: ManagedChild[] = [];
  readonly #logDir: string;
  #stopping = false;

  constructor(logDir: string) {
    this.#logDir = logDir;
  }

  get children(): readonly ManagedChild[] {
    return this.#children;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  #refuseWhileStopping(name: string): void {
    if (this.#stopping) throw new Error(`not starting ${name}: the stack is stopping`);
  }

  #track(proc: LaunchedProcess, logFile: string): ManagedChild {
    const child = managed(proc, logFile);
    this.#children.push(child);
    return child;
  }

  /** Any command (redis-server, nginx, an installed bin). */
  spawn(spec: ChildSpec): ManagedChild {
    this.#refuseWhileStopping(spec.name);
    const logFile = join(this.#logDir, `${spec.name}.log`);
    const proc = launch({
      ...spec,
      group: true,
      logFile,
      ...(spec.onLine ? { onLine: (line: string) => spec.onLine!(line) } : {}),
    });
    return this.#track(proc, logFile);
  }

  /** A role's shipped bin (scripts/launch/roles.ts). */
  role(role: Role, spec: StartSpec & { name: string }): ManagedChild {
    this.#refuseWhileStopping(spec.name);
    const logFile = join(this.#logDir, `${spec.name}.log`);
    const proc = startRole(role, { ...spec, group: true, logFile });
    return this.#track(proc, logFile);
  }

  /** A TypeScript script of this repo, compiled, on plain node (scripts/launch/roles.ts). */
  async script(script: string, spec: StartSpec & { name: string }): Promise<ManagedChild> {
    this.#refuseWhileStopping(spec.name);
    const logFile = join(this.#logDir, `${spec.name}.log`);
    const proc = await startScript(script, { ...spec, group: true, logFile });
    return this.#track(proc, logFile);
  }

  /**
   * Stops every group: SIGTERM in reverse start order (Agents first, the Server last, so nobody
   * logs a reconnect storm), then SIGKILL for any group still alive after `graceMs`.
   * Resolves when every group is empty. Safe to call more than once.
   */
  async stopAll(graceMs = 3000): Promise<void> {
    this.#stopping = true;
    const all = [...this.#children].reverse();
    for (const c of all) signalGroup(c.pid, "SIGTERM");
    const gone = await Promise.all(all.map((c) => waitGroupGone(c.pid, graceMs)));
    const stubborn = all.filter((_, i) => !gone[i]);
    for (const c of stubborn) signalGroup(c.pid, "SIGKILL");
    await Promise.all(stubborn.map((c) => waitGroupGone(c.pid, 2000)));
    // Leaders are our own children: wait for their exit events so no handle stays open.
    await Promise.all(all.map((c) => c.exited));
  }

  /** Synchronous last resort for `process.on("exit")`: SIGKILL every group still alive. */
  killAllNow(): void {
    for (const c of this.#children) if (groupAlive(c.pid)) signalGroup(c.pid, "SIGKILL");
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Group already gone.
  }
}

/**
 * The first line of `lines` (a child's stdout as it arrives) that matches `re`; rejects after
 * `timeoutMs`, or when the child exits without it (its last line may come with its exit).
 */
export function firstLine(
  child: ManagedChild,
  lines: string[],
  re: RegExp,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const deadline = performance.now() + timeoutMs;
    const timer = setInterval(() => {
      const hit = lines.find((l) => re.test(l));
      if (hit !== undefined) {
        clearInterval(timer);
        resolve(hit);
      } else if (performance.now() > deadline) {
        clearInterval(timer);
        reject(
          new Error(
            `${child.name}: no line ${re} in ${timeoutMs} ms:\n  ${child.tail().join("\n  ")}`,
          ),
        );
      }
    }, 10);
    void child.exited.then((code) => {
      setTimeout(() => {
        clearInterval(timer);
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) resolve(hit);
        else reject(new Error(`${child.name} exited (${code}):\n  ${child.tail().join("\n  ")}`));
      }, 50);
    });
  });
}
