/**
 * The Computer's piscina pool. It runs whole-file sha256 (`hash-file.ts`) so hashing a 1 GiB
 * file never blocks the event loop. Base64 stays inline on purpose: performance-anchors B8
 * measured base64 of 768 KiB inside the pool at 184–221 MB/s against 2781–6765 MB/s inline,
 * because the returned string is cloned into the main heap (page faults). Do not offload it.
 *
 * `workers: 0` disables the pool: every hash then runs inline (same code, async reads, ~0.6 ms of
 * CPU per MiB between reads). The bench uses the switch to compare both paths.
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { HashFileResult, HashFileTask } from "./hash-file.ts";

export interface HashPool {
  hash(task: HashFileTask): Promise<HashFileResult>;
  close(): Promise<void>;
}

/** Default pool size: one thread per spare core, at most two (hashing is one stream per file). */
export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(2, availableParallelism() - 1));
}

/**
 * The worker module next to this one: `hash-file.ts` when the Computer runs from source (tsx),
 * `hash-file.js` in the built package. From source the thread needs the tsx loader and the
 * source export condition even when the parent's execArgv holds unrelated flags (e.g.
 * `node --test`); a thread given execArgv does not inherit the parent's `--conditions`.
 */
function workerEntry(): { filename: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith(".ts");
  return fromSource
    ? {
        filename: new URL("./hash-file.ts", import.meta.url).href,
        execArgv: ["--conditions=@a2c-smcp/source", "--import", "tsx"],
      }
    : { filename: new URL("./hash-file.js", import.meta.url).href, execArgv: [] };
}

export function createHashPool(workers: number): HashPool | null {
  if (workers <= 0) return null;
  const pool = new Piscina<HashFileTask, HashFileResult>({
    ...workerEntry(),
    minThreads: 0, // spawn on first large file, not at start
    maxThreads: workers,
    idleTimeout: 30_000, // avoid thread churn between pulls (piscina README)
  });
  return {
    hash: (task) => pool.run(task),
    close: () => pool.destroy(),
  };
}
