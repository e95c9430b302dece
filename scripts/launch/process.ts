/**
 * One child process as the stack, the bench, the tests and the soak start it: an optional
 * command prefix it runs under (`ip netns exec NS`, `nice -n 10`, `chrt --idle 0`), its output
 * kept line by line (bounded) and optionally appended to a log file, waits for a line, and a stop
 * that reaches everything it started when it leads a process group of its own.
 *
 * WHY process groups: a Computer starts its MCP servers as children of its own; stopping only the
 * Computer's pid would orphan them. A `group` child is spawned `detached` (setsid), so a signal to
 * `-pid` reaches it and everything it started, and a Ctrl-C in the terminal reaches only the
 * parent, which then stops its groups in order.
 */
import { spawn, type ChildProcess, type Serializable } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";

export interface ProcessSpec {
  /** Short label for errors and logs (`server`, `computer-1`, `agent-2`). */
  name: string;
  command: string;
  args: string[];
  /**
   * Prepended to the command line: `["ip", "netns", "exec", "ns1"]`, `["nice", "-n", "10"]`,
   * `["chrt", "--idle", "0"]`. Such wrappers exec the command, so the pid is the command's.
   */
  prefix?: readonly string[];
  /** The child's whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** A process group of its own (setsid): `stop()` and `kill()` reach everything it started. */
  group?: boolean;
  /** An IPC channel (structured clone), as `fork` gives. */
  ipc?: boolean;
  /** Also append every byte the child writes to this file. */
  logFile?: string;
  /** Called with each complete line the child writes (stdout or stderr). */
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
  /** How many bytes of output lines to keep in memory (oldest dropped first); default 8 MiB. */
  keepBytes?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The shell's convention: the exit code, or 128 + the signal's number (127: did not start). */
  status: number;
}

export interface LaunchedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Every line kept so far, stdout and stderr in the order they arrived. */
  lines(): string[];
  /** The lines kept so far, joined (each line ends with `\n`). */
  output(): string;
  /** What stdout carried so far, byte for byte (its last `keepBytes` when longer). */
  stdout(): string;
  /** What stderr carried so far, byte for byte (its last `keepBytes` when longer). */
  stderr(): string;
  /** The last `n` lines, long ones cut, for failure messages. */
  tail(n?: number): string[];
  /** The first line (kept or to come) matching `re`; rejects on exit or after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves once the child has exited (never rejects). */
  readonly exited: Promise<Exit>;
  /** Sends an IPC message (needs `ipc`). */
  send(message: Serializable): void;
  /**
   * Sends `signal` (to the group with `group`), then SIGKILL if anything is left after `graceMs`;
   * resolves when the child (and with `group`, every process of its group) is gone.
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
  /** `stop(signal)` (default SIGKILL) with 10 s of grace before a SIGKILL. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
}

const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGUSR2: 12,
  SIGTERM: 15,
  SIGSTOP: 19,
};
const MAX_TAIL_LINE = 300;
const DEFAULT_KEEP = 8 * 1024 * 1024;

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

/**
 * Waits until no process of group `pgid` is left, up to `ms`. Grandchildren are not our
 * children, so no exit event exists for them: polling the group is the only way.
 */
export async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

function signalTarget(pid: number, group: boolean, signal: NodeJS.Signals): void {
  try {
    process.kill(group ? -pid : pid, signal);
  } catch {
    // Already gone.
  }
}

export function launch(spec: ProcessSpec): LaunchedProcess {
  const argv = [...(spec.prefix ?? []), spec.command, ...spec.args];
  const group = spec.group === true;
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    detached: group,
    stdio: spec.ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
    ...(spec.ipc ? { serialization: "advanced" as const } : {}),
  });
  const log: WriteStream | null = spec.logFile
    ? createWriteStream(spec.logFile, { flags: "a" })
    : null;
  const keepBytes = spec.keepBytes ?? DEFAULT_KEEP;
  const kept: { line: string }[] = [];
  let keptBytes = 0;
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];

  const take = (line: string, stream: "stdout" | "stderr"): void => {
    kept.push({ line });
    keptBytes += line.length + 1;
    while (keptBytes > keepBytes && kept.length > 1) keptBytes -= kept.shift()!.line.length + 1;
    for (const w of [...waiters]) {
      const m = w.re.exec(line);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
    spec.onLine?.(line, stream);
  };
  const partial = { stdout: "", stderr: "" };
  const raw = { stdout: "", stderr: "" };
  const reader = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
    log?.write(chunk);
    const text = chunk.toString("utf8");
    raw[stream] += text;
    if (raw[stream].length > keepBytes) raw[stream] = raw[stream].slice(-keepBytes);
    const parts = (partial[stream] + text).split("\n");
    partial[stream] = parts.pop() ?? "";
    for (const line of parts) take(line, stream);
  };
  child.stdout!.on("data", reader("stdout"));
  child.stderr!.on("data", reader("stderr"));

  const exited = new Promise<Exit>((resolve) => {
    let done = false;
    let fallback: NodeJS.Timeout | undefined;
    const finish = (exit: Exit): void => {
      if (done) return;
      done = true;
      clearTimeout(fallback);
      // A last line without its newline still counts.
      for (const stream of ["stdout", "stderr"] as const) {
        if (partial[stream]) take(partial[stream], stream);
        partial[stream] = "";
      }
      log?.end();
      resolve(exit);
    };
    child.once("exit", (code, signal) => {
      // Output may still be in the pipes: wait for them to close, briefly.
      const status = code ?? 128 + (signal ? (SIGNAL_NUMBERS[signal] ?? 0) : 0);
      const settle = (): void => finish({ code, signal, status });
      // Wait for the pipes still open: one that ended or closed before the exit has no `close`
      // left to wait for (waiting for it left this promise unsettled: the stack exited 13).
      const open = [child.stdout!, child.stderr!].filter((s) => !s.readableEnded && !s.closed);
      if (open.length === 0) return settle();
      let left = open.length;
      for (const s of open) s.once("close", () => void (--left === 0 && settle()));
      // A grandchild holding the pipes open must not hold the exit back. Not unref'd: with
      // nothing else to wait for, the loop would end with this promise never settled.
      fallback = setTimeout(settle, 1000);
    });
    // A spawn failure (ENOENT, EACCES) emits `error` and possibly no `exit`.
    child.once("error", (err) => {
      take(`spawn error: ${err.message}`, "stderr");
      finish({ code: null, signal: null, status: 127 });
    });
  });
  let gone = false;
  void exited.then(() => (gone = true));

  const stop = async (signal: NodeJS.Signals = "SIGTERM", graceMs = 3000): Promise<Exit> => {
    const pid = child.pid;
    if (pid === undefined) return exited;
    if (group) {
      signalTarget(pid, true, signal);
      if (!(await waitGroupGone(pid, graceMs))) {
        signalTarget(pid, true, "SIGKILL");
        await waitGroupGone(pid, 2000);
      }
      return exited;
    }
    if (gone) return exited;
    signalTarget(pid, false, signal);
    const timer = setTimeout(() => signalTarget(pid, false, "SIGKILL"), graceMs);
    const exit = await exited;
    clearTimeout(timer);
    return exit;
  };

  return {
    name: spec.name,
    child,
    pid: child.pid ?? -1,
    lines: () => kept.map((k) => k.line),
    output: () => kept.map((k) => `${k.line}\n`).join(""),
    stdout: () => raw.stdout,
    stderr: () => raw.stderr,
    tail: (n = 30) =>
      kept
        .slice(-n)
        .map((k) =>
          k.line.length > MAX_TAIL_LINE ? `${k.line.slice(0, MAX_TAIL_LINE)}…` : k.line,
        ),
    waitFor: (re, timeoutMs = 60_000) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        for (const k of kept) {
          const m = re.exec(k.line);
          if (m) return resolve(m);
        }
        const fail = (why: string): void => {
          const i = waiters.indexOf(waiter);
          if (i === -1) return;
          waiters.splice(i, 1);
          clearTimeout(timer);
          reject(new Error(`${spec.name}: ${why} before a line matched ${re}:\n${tailText()}`));
        };
        const waiter = {
          re,
          resolve: (m: RegExpExecArray) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => fail(`${timeoutMs} ms passed`), timeoutMs);
        waiters.push(waiter);
        void exited.then((e) => fail(`exited with ${e.status}`));
      }),
    exited,
    send: (message) => {
      if (!child.send) throw new Error(`${spec.name} has no IPC channel`);
      child.send(message);
    },
    stop,
    kill: (signal = "SIGKILL") => stop(signal, 10_000),
  };

  function tailText(): string {
    return kept
      .slice(-40)
      .map((k) => `  ${k.line.slice(0, MAX_TAIL_LINE)}`)
      .join("\n");
  }
}
