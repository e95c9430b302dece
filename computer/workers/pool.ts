/**
 * The Computer's hashing threads. They run whole-file sha256 (`hash-file.ts`) and the production
 * of derived files (`derive-file.ts`: a SKILL.md body stripped, hashed and written in one pass),
 * so neither blocks the event loop for a 1 GiB file. Base64 stays inline on purpose: in the pool
 * it runs an order of magnitude slower than inline, because the returned string is cloned into
 * the main heap (page faults). Do not offload it.
 *
 * Two lanes, so one large job never starves small ones (D59): a job whose source is at most
 * `smallJobMaxBytes` (16 MiB by default, ~10 ms of sha256) runs on the small lane's own thread;
 * larger ones share the `workers` threads of the large lane. A 2 MiB mint therefore waits behind
 * other small jobs only, never behind a 10 GiB hash that holds every large-lane thread for
 * seconds. Each lane's queue is bounded: a job that finds it full is refused at once with
 * `HashBusyError`, which the Computer answers `busy` (retry later) instead of letting the request
 * wait into the Server's relay timeout.
 *
 * `workers: 0` disables the pool: every task then runs inline (same code, async I/O, ~0.6 ms of
 * CPU per MiB between reads, so jobs interleave). The bench uses the switch to compare both paths.
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { DeriveFileResult, DeriveFileTask } from "./derive-file.ts";
import type { HashFileResult, HashFileTask } from "./hash-file.ts";

export type HashLane = "small" | "large";

export interface HashPool {
  /** sha256 of a file of `size` bytes (the lane is chosen by size). */
  hash(task: HashFileTask, size: number): Promise<HashFileResult>;
  /** A derived file from a source of `size` bytes. */
  derive(task: DeriveFileTask, size: number): Promise<DeriveFileResult>;
  close(): Promise<void>;
}

/** What the pool reports (the Computer's metrics; computer/metrics.ts). */
export interface HashPoolMetrics {
  /** Jobs waiting for a thread, by lane. */
  queued: { set(labels: { lane: HashLane }, value: number): void };
  /** Time from submission to a thread taking the job, by lane. */
  waitSeconds: { observe(labels: { lane: HashLane }, value: number): void };
  /** Jobs refused because their lane's queue was full, by lane. */
  refusals: { inc(labels: { lane: HashLane }): void };
}

export interface HashPoolOptions {
  /** Jobs whose source is at most this many bytes take the small lane. Default 16 MiB. */
  smallJobMaxBytes?: number;
  /** Jobs waiting in the small lane before new ones are refused. Default 256. */
  smallQueue?: number;
  /** Jobs waiting in the large lane before new ones are refused. Default 16. */
  largeQueue?: number;
  metrics?: HashPoolMetrics;
}

export const DEFAULT_SMALL_JOB_MAX_BYTES = 16 * 1024 * 1024;
export const DEFAULT_SMALL_QUEUE = 256;
export const DEFAULT_LARGE_QUEUE = 16;

/** A job refused because its lane's queue is full: answered `busy` (retry later). */
export class HashBusyError extends Error {
  override readonly name = "HashBusyError";
  constructor(readonly lane: HashLane) {
    super(`Too many files waiting to be hashed (${lane} files); retry later`);
  }
}

/** Large-lane threads by default: one per spare core, at most two (hashing is one stream per file). */
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

interface Job {
  readonly task: object;
  readonly filename: string;
  readonly queuedAt: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** One lane: its own threads, at most `threads` jobs running, a bounded FIFO in front. */
class Lane {
  readonly #pool: Piscina;
  readonly #queue: Job[] = [];
  #running = 0;
  #closed = false;

  constructor(
    readonly name: HashLane,
    private readonly threads: number,
    private readonly maxQueued: number,
    private readonly metrics: HashPoolMetrics | undefined,
  ) {
    this.#pool = new Piscina({
      filename: workerFile("hash-file"),
      execArgv: EXEC_ARGV,
      minThreads: 0, // spawn on first use, not at start
      maxThreads: threads,
      idleTimeout: 30_000, // avoid thread churn between pulls (piscina README)
    });
  }

  run(task: object, filename: string): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error("hash pool closed"));
    return new Promise((resolve, reject) => {
      const job: Job = {
        task,
        filename,
        queuedAt: performance.now(),
        resolve,
        reject,
      };
      if (this.#running < this.threads) return this.#start(job);
      if (this.#queue.length >= this.maxQueued) {
        this.metrics?.refusals.inc({ lane: this.name });
        return reject(new HashBusyError(this.name));
      }
      this.#queue.push(job);
      this.metrics?.queued.set({ lane: this.name }, this.#queue.length);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new Error("hash pool closed"));
    await this.#pool.destroy();
  }

  #start(job: Job): void {
    this.#running++;
    this.metrics?.waitSeconds.observe(
      { lane: this.name },
      (performance.now() - job.queuedAt) / 1000,
    );
    this.#pool
      .run(job.task, { filename: job.filename })
      .then(job.resolve, job.reject)
      .finally(() => {
        this.#running--;
        const next = this.#queue.shift();
        if (next) {
          this.metrics?.queued.set({ lane: this.name }, this.#queue.length);
          this.#start(next);
        }
      });
  }
}

/** The pool with `workers` large-lane threads and one small-lane thread; `null` for 0. */
export function createHashPool(workers: number, opts: HashPoolOptions = {}): HashPool | null {
  if (workers <= 0) return null;
  const smallMax = opts.smallJobMaxBytes ?? DEFAULT_SMALL_JOB_MAX_BYTES;
  const small = new Lane("small", 1, opts.smallQueue ?? DEFAULT_SMALL_QUEUE, opts.metrics);
  const large = new Lane("large", workers, opts.largeQueue ?? DEFAULT_LARGE_QUEUE, opts.metrics);
  const lane = (size: number): Lane => (size <= smallMax ? small : large);
  const hashFile = workerFile("hash-file");
  const deriveFile = workerFile("derive-file");
  return {
    hash: (task, size) => lane(size).run(task, hashFile) as Promise<HashFileResult>,
    derive: (task, size) => lane(size).run(task, deriveFile) as Promise<DeriveFileResult>,
    close: async () => {
      await Promise.all([small.close(), large.close()]);
    },
  };
}
