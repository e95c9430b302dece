/**
 * The Computer's piscina pool. It runs whole-file sha256 (`hash-file.ts`) and the production of
 * derived files (`derive-file.ts`: a SKILL.md body stripped, hashed and written in one pass), so
 * neither blocks the event loop for a 1 GiB file. Base64 stays inline on purpose: in the pool it
 * runs an order of magnitude slower than inline, because the returned string is cloned into the
 * main heap (page faults). Do not offload it.
 *
 * `workers: 0` disables the pool: every task then runs inline (same code, async I/O, ~0.6 ms of
 * CPU per MiB between reads). The bench uses the switch to compare both paths.
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { DeriveFileResult, DeriveFileTask } from "./derive-file.ts";
import type { HashFileResult, HashFileTask } from "./hash-file.ts";

export interface HashPool {
  hash(task: HashFileTask): Promise<HashFileResult>;
  derive(task: DeriveFileTask): Promise<DeriveFileResult>;
  close(): Promise<void>;
}

/** Default pool size: one thread per spare core, at most two (hashing is one stream per file). */
export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(2, availableParallelism() - 1));
}

const FROM_SOURCE = import.meta.url.endsWith(".ts");

/**
 * A worker module next to this one: `<name>.ts` when the Computer runs from source (tsx),
 * `<name>.js` in the built package.
 */
function workerFile(name: "hash-file" | "derive-file"): string {
  return new URL(`./${name}.${FROM_SOURCE ? "ts" : "js"}`, import.meta.url).href;
}

/**
 * From source a thread needs the tsx loader and the source export condition even when the
 * parent's execArgv holds unrelated flags (e.g. `node --test`); a thread given execArgv does not
 * inherit the parent's `--conditions`.
 */
const EXEC_ARGV = FROM_SOURCE ? ["--conditions=@a2c-smcp/source", "--import", "tsx"] : [];

export function createHashPool(workers: number): HashPool | null {
  if (workers <= 0) return null;
  const deriveFile = workerFile("derive-file");
  const pool = new Piscina({
    filename: workerFile("hash-file"),
    execArgv: EXEC_ARGV,
    minThreads: 0, // spawn on first large file, not at start
    maxThreads: workers,
    idleTimeout: 30_000, // avoid thread churn between pulls (piscina README)
  });
  return {
    hash: (task) => pool.run(task) as Promise<HashFileResult>,
    derive: (task) => pool.run(task, { filename: deriveFile }) as Promise<DeriveFileResult>,
    close: () => pool.destroy(),
  };
}
