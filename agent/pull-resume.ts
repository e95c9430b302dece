/**
 * The pull loop's resume and retry policy: which failures a resume can cure, how a resume waits
 * for the Computer (and our socket) to come back, and when a read that must start again from
 * offset 0 gives up instead. "sha256 / total_size MUST be stable within one logical read; an
 * Agent that sees them change MUST restart from offset 0 and never splice mismatched bytes"
 * (D18); a final digest mismatch "SHOULD verify and re-read on mismatch".
 */
import {
  BlobChangedError,
  ComputerNotFoundError,
  DisconnectedError,
  IntegrityError,
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  abortError,
} from "./errors.ts";
import { silentLogger } from "./logger.ts";
import {
  DEFAULT_RESUME_TIMEOUT_MS,
  type ChunkFetcher,
  type PullOptions,
  type PullStats,
} from "./pull-types.ts";

/** Failures a resume can cure: the Computer or our socket went away, or was slow. */
export function isTransient(err: unknown): boolean {
  if (err instanceof DisconnectedError || err instanceof RequestTimeoutError) return true;
  if (err instanceof ComputerNotFoundError || err instanceof RelayTimeoutError) return true;
  return err instanceof ServerError; // 500 / busy: retried after a backoff
}

/** Thrown inside a read to start again from offset 0. */
export class Restart extends Error {
  constructor(readonly why: string) {
    super(`restart: ${why}`);
  }
}

/**
 * After a `Restart` (the read's `restarts` count already bumped): the error to give up with, or
 * undefined when the read may start again from offset 0.
 */
export function restartRefusal(
  err: Restart,
  restarts: number,
  rereads: number,
  canRestart: () => boolean,
): Error | undefined {
  if (restarts > rereads) {
    return err.why === "mismatch"
      ? new IntegrityError(`sha256 of the reassembled blob did not match after ${restarts} reads`)
      : new BlobChangedError(`blob kept changing during the read (${err.why})`);
  }
  if (!canRestart()) {
    return err.why === "mismatch"
      ? new IntegrityError("sha256 mismatch after bytes were already streamed")
      : new BlobChangedError(`blob changed after bytes were already streamed (${err.why})`);
  }
  return undefined;
}

/** Waits for the Computer (and our socket) to be back, with a small backoff. */
export async function waitToResume(
  fetcher: ChunkFetcher,
  computer: string,
  opts: PullOptions,
  stats: PullStats,
  err: unknown,
  attempt: number,
): Promise<void> {
  const { signal } = opts;
  stats.resumes++;
  (fetcher.logger ?? silentLogger).info(
    { computer, err: String(err), attempt },
    "blob pull resuming",
  );
  await fetcher.waitForComputer(computer, {
    ...(signal ? { signal } : {}),
    timeoutMs: opts.resumeTimeoutMs ?? DEFAULT_RESUME_TIMEOUT_MS,
  });
  // The Computer is listed again; a short backoff keeps a flapping peer from burning retries.
  const delay = Math.min(50 * 2 ** (attempt - 1), 2000);
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(done, delay);
    function done(): void {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort(): void {
      clearTimeout(t);
      reject(abortError(signal!));
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
