/**
 * Child processes of the stack, each the leader of its own process group.
 *
 * WHY process groups: a Computer starts its MCP servers as children of its own; killing only the
 * Computer's pid would orphan them. Every child is spawned `detached` (setsid), so `kill(-pid)`
 * reaches the child and everything it started, and a Ctrl-C in the terminal reaches only the
 * stack, which then stops the groups in order. Nothing is left behind on a normal exit, a failed
 * scenario, SIGINT or SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { join } from "node:path";

export interface ChildSpec {
  /** Short label used in logs and error messages (e.g. `server`, `computer-1`, `agent-2`). */
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Open an IPC channel (scripted Agents report progress through it). */
  ipc?: boolean;
  /** Called with each complete stdout line, after it was written to the log file. */
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
}

const TAIL_LINES = 30;
const MAX_LINE = 300;
const SIGNAL_NUMBERS: Record<string, number> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** True while at least one process of group `pgid` exists. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM means a process exists but belongs to someone else: still alive.
    return (err as NodeJS.ErrnoException).code === "EPERM";
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
 * Waits until no process of group `pgid` is left, up to `ms`. Grandchildren are not our
 * children, so no exit event exists for them: checking the group is the only way.
 */
export async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
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

  spawn(spec: ChildSpec): ManagedChild {
    if (this.#stopping) throw new Error(`not starting ${spec.name}: the stack is stopping`);
    const logFile = join(this.#logDir, `${spec.name}.log`);
    const log: WriteStream = createWriteStream(logFile, { flags: "a" });
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: spec.ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
    });
    if (child.pid === undefined) throw new Error(`could not start ${spec.name}`);
    const pid = child.pid;
    const tail: string[] = [];
    const keep = (line: string): void => {
      // A stack trace of transpiled code can be one enormous line: keep its start only.
      tail.push(line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line);
      if (tail.length > TAIL_LINES) tail.shift();
    };
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      log.write(chunk);
      const text = partial + chunk.toString("utf8");
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        keep(line);
        spec.onLine?.(line);
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      log.write(chunk);
      for (const line of chunk.toString("utf8").split("\n")) if (line) keep(line);
    });
    const exited = new Promise<number>((resolve) => {
      child.once("exit", (code, signal) => {
        resolve(code ?? 128 + (signal ? (SIGNAL_NUMBERS[signal] ?? 0) : 0));
      });
      // A spawn failure (ENOENT, EACCES) emits `error` and possibly no `exit`.
      child.once("error", (err) => {
        keep(`spawn error: ${err.message}`);
        resolve(127);
      });
    }).finally(() => log.end());
    const managed: ManagedChild = {
      name: spec.name,
      process: child,
      pid,
      logFile,
      exited,
      tail: () => [...tail],
    };
    this.#children.push(managed);
    return managed;
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
