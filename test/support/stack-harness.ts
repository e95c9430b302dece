/**
 * Helpers for the stack tests: run `scripts/stack.ts` as a process, read its output line by line
 * until something appears, and find every process it started (from /proc) to prove they are
 * gone afterwards.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "..", "..");

export interface StackProcess {
  child: ChildProcess;
  /** Every stdout+stderr line so far. */
  lines: string[];
  /** Resolves with the first line matching `re` (rejects if the stack exits first). */
  waitFor(re: RegExp): Promise<RegExpExecArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
}

export function startStack(args: string[], env: NodeJS.ProcessEnv = {}): StackProcess {
  const child = spawn(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "scripts/stack.ts", ...args],
    {
      cwd: ROOT,
      env: { ...process.env, A2C_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const lines: string[] = [];
  let out = "";
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const onText = (buf: Buffer, isStdout: boolean): void => {
    const text = buf.toString("utf8");
    if (isStdout) out += text;
    for (const line of text.split("\n")) {
      if (!line) continue;
      lines.push(line);
      for (const w of [...waiters]) {
        const m = w.re.exec(line);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  };
  child.stdout.on("data", (b: Buffer) => onText(b, true));
  child.stderr.on("data", (b: Buffer) => onText(b, false));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  );
  return {
    child,
    lines,
    exited,
    stdout: () => out,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        for (const line of lines) {
          const m = re.exec(line);
          if (m) return resolve(m);
        }
        waiters.push({ re, resolve });
        void exited.then(({ code }) =>
          reject(new Error(`stack exited (${code}) before ${re}:\n${lines.slice(-40).join("\n")}`)),
        );
      }),
  };
}

/** Parent pid of `pid` from /proc, or null when it no longer exists. */
function ppidOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[1]);
  } catch {
    return null;
  }
}

/** Every live descendant of `root` (children, grandchildren, ...). */
export function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = ppidOf(Number(entry));
    if (ppid !== null) parent.set(Number(entry), ppid);
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [pid, pp] of parent) {
      if (pp === p) {
        out.push(pid);
        walk(pid);
      }
    }
  };
  walk(root);
  return out;
}

/** The command line of `pid` (empty when gone). */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** True while `pid` exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
