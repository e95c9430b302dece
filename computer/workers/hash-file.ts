/**
 * Worker task: sha256 of the file behind an already-open descriptor, verified against the content
 * signature the caller saw. Runs in the piscina pool (large files) or inline (small files, or
 * `--workers 0`); both paths run this same function.
 *
 * Why a descriptor and not a path: worker threads share the process's descriptor table, so the
 * worker reads exactly the inode the engine opened (an atomic-rename rewrite of the path cannot
 * make it hash a different file), and no byte crosses the thread boundary; only the hex digest
 * comes back. The caller keeps the descriptor open until this task settles.
 *
 * Why the signature check before and after: the digest is only valid for the content signature
 * (device, inode, size, mtime ns, ctime ns) that held during the whole read. An in-place write
 * while hashing changes mtime/ctime (and usually size), so the task reports `changed` and the
 * caller retries with the new signature instead of caching a digest of mixed content.
 *
 * Why a pool thread lowers its own priority (`nice`): hashing is background work, while the
 * Computer's main thread serves chunks that Agents wait for. On a 2-core machine the hash thread
 * otherwise competes with the main thread (and the Server and Agents) as an equal. On Linux,
 * setpriority(PRIO_PROCESS, 0) called from a thread applies to that thread only (NPTL threads are
 * separate schedulable tasks; verified with /proc/self/task/<tid>/stat), so `os.setPriority(0, n)`
 * here leaves the main thread alone. The inline path runs on the main thread and never renices.
 *
 * Why synchronous reads in a pool thread: the thread runs one task at a time and has nothing else
 * to do, so a blocking read costs nothing there, while an async read would hop through libuv's
 * threadpool, which is shared with the main thread's chunk reads and runs at normal priority. The
 * inline path keeps async reads so the main thread's loop turns between reads.
 */
import { createHash } from "node:crypto";
import { fstat, read, readSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { isMainThread } from "node:worker_threads";
import zlib from "node:zlib";
import { promisify } from "node:util";
import { signatureOf } from "../blob/descriptors.ts";

/** `zlib.crc32` (Node >= 20.15), where this Node has it: the served-bytes check needs it. */
export const crc32: ((data: Uint8Array, value?: number) => number) | undefined = (
  zlib as { crc32?: (data: Uint8Array, value?: number) => number }
).crc32;

const fstatAsync = promisify(fstat);
const readAsync = promisify(read);

export interface HashFileTask {
  fd: number;
  /** `signatureOf(stats)` as seen by the caller. */
  signature: string;
  /**
   * Pool threads only: run at this nice offset above the thread's starting priority (capped at
   * 19). Ignored on the main thread. Unprivileged, a thread cannot take back a lowered priority
   * (RLIMIT_NICE), so a smaller offset later only applies if the process may raise priority.
   */
  nice?: number;
}

/** `crc32`: of the same bytes, for the served-bytes check (blob/hash-cache.ts, `Coverage`), where Node has it. */
export type HashFileResult = { sha256: string; crc32?: number } | { changed: true };

const READ_BYTES = 1024 * 1024;
/**
 * Reused read buffers. In a worker a task runs alone, but the inline path (small files,
 * `--workers 0`) can run several hashes at once on the main thread, so each task takes its own.
 */
const scratch: Buffer[] = [];
const MAX_SPARE_BUFFERS = 4;

/** The nice value this thread started with (inherited from the thread that created it). */
const startNice = isMainThread ? 0 : getPriority(0);

/** Lowers this pool thread's priority to `offset` above its starting nice value (capped at 19). */
export function applyNice(offset: number): void {
  const target = Math.min(19, startNice + Math.max(0, Math.trunc(offset)));
  if (getPriority(0) === target) return;
  try {
    setPriority(0, target);
  } catch {
    // EACCES: lowering the nice value again needs privilege; the thread stays at the lower priority.
  }
}

export default async function hashFile(task: HashFileTask): Promise<HashFileResult> {
  const before = await fstatAsync(task.fd, { bigint: true });
  if (signatureOf(before) !== task.signature) return { changed: true };
  const size = Number(before.size);
  if (!isMainThread && task.nice !== undefined) applyNice(task.nice);
  const buf = scratch.pop() ?? Buffer.allocUnsafeSlow(READ_BYTES);
  const hash = createHash("sha256");
  let crc = crc32 ? 0 : undefined;
  try {
    let pos = 0;
    while (pos < size) {
      const want = Math.min(READ_BYTES, size - pos);
      const bytesRead = isMainThread
        ? (await readAsync(task.fd, buf, 0, want, pos)).bytesRead
        : readSync(task.fd, buf, 0, want, pos);
      if (bytesRead === 0) return { changed: true }; // truncated under us
      hash.update(buf.subarray(0, bytesRead));
      if (crc !== undefined) crc = crc32!(buf.subarray(0, bytesRead), crc);
      pos += bytesRead;
    }
  } finally {
    if (scratch.length < MAX_SPARE_BUFFERS) scratch.push(buf);
  }
  const after = await fstatAsync(task.fd, { bigint: true });
  if (signatureOf(after) !== task.signature) return { changed: true };
  const sha256 = hash.digest("hex");
  return crc === undefined ? { sha256 } : { sha256, crc32: crc };
}
