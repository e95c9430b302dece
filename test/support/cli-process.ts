/**
 * The Agent CLI (`a2c-agent`, the shipped build: scripts/launch/) as a process, for tests that
 * watch it while it runs: `startCli` (stderr seen
 * line by line, so a test can signal it at a known point) and `runCliTty` (under a
 * pseudo-terminal, through util-linux `script`, so stderr is a TTY and the progress bar draws),
 * and `useDownloadStack`, the real stack a download test pulls a file from.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { after, before } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { roleCommand, startRole } from "../../scripts/launch/roles.ts";
import {
  REPO_ROOT,
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "./agent-stack.ts";

export interface CliProcess {
  child: ChildProcess;
  /** Resolves with the first stderr line matching `re` (rejects if the process exits first). */
  stderrLine(re: RegExp): Promise<string>;
  /** Exit code and everything written. */
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>;
}

/** `a2c-agent ARGS` (the shipped build), watched while it runs. */
export function startCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const seen: string[] = [];
  const waiters: { re: RegExp; resolve: (line: string) => void }[] = [];
  const cli = startRole("agent", {
    args,
    env: { A2C_LOG_LEVEL: "silent", ...env },
    keepBytes: 64 * 1024 * 1024,
    onLine: (line, stream) => {
      if (stream !== "stderr") return;
      seen.push(line);
      for (const w of [...waiters]) {
        if (w.re.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    },
  });
  const done = cli.exited.then((e) => ({
    code: e.code,
    signal: e.signal,
    stdout: cli.stdout(),
    stderr: cli.stderr(),
  }));
  return {
    child: cli.child,
    done,
    stderrLine: (re) =>
      new Promise<string>((resolve, reject) => {
        const line = seen.find((l) => re.test(l));
        if (line !== undefined) return resolve(line);
        waiters.push({ re, resolve });
        void done.then((d) =>
          reject(new Error(`exited before a line matched ${re}:\n${d.stderr}`)),
        );
      }),
  };
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * Runs the CLI with stdin, stdout and stderr on a pseudo-terminal (`script -qec CMD /dev/null`);
 * resolves with its exit code and what the terminal showed (stdout and stderr together, with the
 * terminal's `\r\n` line ends).
 */
export function runCliTty(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; screen: string }> {
  const command = [...roleCommand("agent"), ...args].map(shellQuote).join(" ");
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      cwd: REPO_ROOT,
      env: { ...process.env, A2C_LOG_LEVEL: "silent", ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let screen = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (screen += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, screen }));
  });
}

export interface DownloadStack {
  stack: AgentStack;
  /** sha256 of `files/data.bin`. */
  sha: string;
  /** The CLI arguments that download `files/data.bin` to `file`. */
  args(file: string): string[];
}

/**
 * A real Server and Computer serving skill `files` with a random `data.bin` of `size` bytes,
 * started in `before` and closed in `after`; the object is filled once they are up.
 */
export function useDownloadStack(size: number): DownloadStack {
  let computer: RunningComputer | undefined;
  const ds = {
    args(file: string): string[] {
      const s = ds.stack;
      return [
        ...["--server", s.url, "--office", s.office, "--token", s.token],
        ...["skill", "pc", "files", "data.bin", "-o", file],
      ];
    },
  } as DownloadStack;
  before(async () => {
    ds.stack = await startAgentStack();
    const root = await writeSkill(ds.stack.home, "files", "Files.");
    ds.sha = await writeRandomFile(join(root, "data.bin"), size);
    computer = await inProcessComputer(ds.stack, "pc");
  });
  after(async () => {
    await computer?.close();
    await ds.stack?.close();
  });
  return ds;
}
