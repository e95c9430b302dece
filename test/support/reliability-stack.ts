/**
 * Shared helpers of the reliability suite (test/reliability/): a real Server and a real Computer in THIS
 * process (so an unhandled rejection or a crash in either is seen by the test), a skill home on
 * disk, pino loggers whose lines the test can read (to prove no token is ever logged), a record of
 * every ErrorPayload any socket received (the `details` hygiene check), and a forced-GC heap probe.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pino, { type Logger } from "pino";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { isErrorPayload, type ErrorPayload } from "../../protocol/index.ts";
import type { ServerOptions } from "../../server/server.ts";
import { ServerHarness, TEST_TOKEN, type Socket } from "./server-harness.ts";

export const REL_OFFICE = "rel-office";

/** A pino logger at trace level that keeps every raw line (the exact bytes a log file would hold). */
export function rawLogger(name: string): { log: Logger; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString("utf8"));
      cb();
    },
  });
  return { log: pino({ name, level: "trace" }, sink), text: () => chunks.join("") };
}

/** Process-level listeners: any unhandled rejection / uncaught exception is kept, not lost. */
export function watchProcess(): { problems: string[]; stop(): void } {
  const problems: string[] = [];
  const onRejection = (reason: unknown): void => {
    problems.push(`unhandledRejection: ${String((reason as Error)?.stack ?? reason)}`);
  };
  const onException = (err: Error): void => {
    problems.push(`uncaughtException: ${String(err.stack ?? err)}`);
  };
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  return {
    problems,
    stop() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
    },
  };
}

/** process.memoryUsage() after a full GC (gc exposed at runtime through V8 flags). */
export function memoryAfterGc(): NodeJS.MemoryUsage {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
  return process.memoryUsage();
}

/** Heap used after a full GC. */
export function heapAfterGc(): number {
  return memoryAfterGc().heapUsed;
}

/** Every ErrorPayload seen, with the event that produced it. */
export const seenErrors: { event: string; error: ErrorPayload }[] = [];

/** Records an ack argument if it is a flat ErrorPayload. */
export function noteError(event: string, value: unknown): void {
  if (isErrorPayload(value)) seenErrors.push({ event, error: value });
}

/**
 * `details` hygiene (D23, protocol.md §9.1): no error carries an absolute path of this machine, a token, the
 * handle key or a stack trace. `secrets` are strings that must never appear (tokens, keys, dirs).
 * Returns the offending entries (empty = clean).
 */
export function hygieneViolations(
  errors: readonly { event: string; error: ErrorPayload }[],
  secrets: readonly string[],
): string[] {
  const bad: string[] = [];
  const cwd = process.cwd();
  const markers = [cwd, tmpdir() + "/", "/home/", "/root/", "/proc/", "/usr/", "node_modules"];
  const stack = /\n\s+at\s|\bat\s+\S+\s+\(|\.ts:\d+:\d+|\.js:\d+:\d+/;
  for (const e of errors) {
    const text = JSON.stringify(e.error);
    const hit =
      secrets.find((s) => s.length >= 6 && text.includes(s)) ??
      markers.find((m) => text.includes(m)) ??
      (stack.test(text) ? "stack trace" : undefined);
    if (hit !== undefined) bad.push(`${e.event}: ${hit}: ${text.slice(0, 300)}`);
  }
  return bad;
}

/** Emit with an ack and a guard timer; the answer's first argument is also noted for hygiene. */
export function ask(socket: Socket, event: string, ...args: unknown[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ack for ${event}`)), 30_000);
    socket.emit(event, ...args, (answer: unknown) => {
      clearTimeout(timer);
      noteError(event, answer);
      resolve(answer);
    });
  });
}

export interface RelStack {
  harness: ServerHarness;
  computer: RunningComputer;
  dir: string;
  home: string;
  stateDir: string;
  serverLog: () => string;
  computerLog: () => string;
  close(): Promise<void>;
}

/** A user skill `<home>/user/<name>/` with SKILL.md and files. Returns the package root. */
export async function writeSkill(
  home: string,
  name: string,
  files: Record<string, string | Buffer> = {},
): Promise<string> {
  const root = join(home, "user", name);
  await mkdir(root, { recursive: true });
  await writeFile(join(root, "SKILL.md"), `---\nname: ${name}\ndescription: ${name}\n---\nBody.\n`);
  for (const [rel, data] of Object.entries(files)) {
    await mkdir(join(root, rel, ".."), { recursive: true });
    await writeFile(join(root, rel), data);
  }
  return root;
}

/** Real Server + real Computer (name `pc`) in this process, joined to REL_OFFICE. */
export async function startRelStack(
  opts: {
    server?: ServerOptions;
    skills?: Record<string, Record<string, string | Buffer>>;
    blob?: { maxInFlight?: number; maxQueue?: number };
    computerName?: string;
  } = {},
): Promise<RelStack> {
  const dir = await mkdtemp(join(tmpdir(), "a2c-rel-"));
  const home = join(dir, "home");
  await mkdir(home, { recursive: true });
  for (const [name, files] of Object.entries(opts.skills ?? { alpha: { "notes.txt": "hello" } }))
    await writeSkill(home, name, files);
  const slog = rawLogger("a2c-server");
  const clog = rawLogger("computer");
  const harness = await ServerHarness.start({ logger: slog.log, ...opts.server });
  const stateDir = join(dir, "state");
  const computer = await startComputer({
    server: harness.url,
    office: REL_OFFICE,
    name: opts.computerName ?? "pc",
    token: TEST_TOKEN,
    skills: home,
    stateDir,
    workers: 0,
    startTimeoutMs: 30_000,
    logger: clog.log,
    ...(opts.blob ? { blob: opts.blob } : {}),
  });
  return {
    harness,
    computer,
    dir,
    home,
    stateDir,
    serverLog: slog.text,
    computerLog: clog.text,
    async close() {
      await computer.close();
      await harness.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
