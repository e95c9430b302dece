/**
 * Worker task: the derived bytes of the file behind an open descriptor (a SKILL.md body with its
 * frontmatter stripped), streamed into a new file while they are hashed, verified against the
 * content signature the caller saw. Runs in the piscina pool, or inline with `--workers 0`; both
 * paths run this function (the pool with blocking I/O, the main thread with async I/O, for the
 * reasons hash-file.ts gives).
 *
 * A derived resource here is a suffix of its source: `start(head)` says where it begins from the
 * source's first `headBytes`. The derivation is named in the task (functions do not cross the
 * thread boundary) and looked up in `DERIVATIONS`.
 *
 * The signature is checked before and after the whole read, exactly as for a hash: bytes read
 * while the source changed are discarded (`changed`), never named by a digest. The new file is
 * written as `<dir>/.tmp-<random>` (O_EXCL, 0600); the caller renames it to its sha256. `written`
 * is that file's `dev:ino:size:mtime` when the last byte was written, so the caller can tell that
 * nothing wrote it afterwards before it records the file's digest.
 *
 * A failure to create or write the new file comes back as `{writeError: code}` (the errno code,
 * e.g. `ENOSPC`), not as a throw: an error thrown in a pool thread reaches the caller without its
 * `code`, and the caller names disk faults by it (D57).
 */
import { createHash, randomBytes } from "node:crypto";
import { close, constants, fstat, open, read, readSync, unlink, write, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { isMainThread } from "node:worker_threads";
import { MAX_FRONTMATTER_BYTES, splitFrontmatter } from "../skills/frontmatter.ts";
import { signatureOf } from "../blob/descriptors.ts";
import { applyNice } from "./hash-file.ts";

export interface Derivation {
  /** Bytes of the source's start that decide where the derived bytes begin. */
  readonly headBytes: number;
  /** Offset in the source of the first derived byte (they run to the source's end). */
  start(head: Buffer): number;
}

export const DERIVATIONS = {
  /** A SKILL.md as served: the frontmatter removed (D21; frontmatter.ts has the fence rule). */
  "skill-md": {
    headBytes: MAX_FRONTMATTER_BYTES + 1,
    start: (head: Buffer) => splitFrontmatter(head)?.bodyStart ?? 0,
  },
} satisfies Record<string, Derivation>;

export type DerivationName = keyof typeof DERIVATIONS;

export interface DeriveFileTask {
  fd: number;
  /** `signatureOf(stats)` of the source as the caller saw it. */
  signature: string;
  derivation: DerivationName;
  /** Directory the derived file is written into. */
  dir: string;
  /** Derived bytes larger than this are not written (`tooLarge`). */
  maxBytes: number;
  /** Pool threads only: nice offset, as for hash-file.ts. */
  nice?: number;
}

export type DeriveFileResult =
  | { sha256: string; size: number; tmp: string; written: string }
  | { changed: true }
  | { tooLarge: number }
  | { writeError: string };

/** A failed create or write of the derived file (its errno code), reported as a result. */
class OutputFailure extends Error {
  readonly code: string;
  constructor(err: unknown) {
    super("writing the derived file failed", { cause: err });
    this.code = String((err as NodeJS.ErrnoException | null)?.code ?? "EUNKNOWN");
  }
}

/** `op` on the derived file; a failure becomes an `OutputFailure`. */
async function output<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw new OutputFailure(err);
  }
}

export const TEMP_PREFIX = ".tmp-";
const BLOCK = 1024 * 1024;
const CHANGED = { changed: true } as const;

const fstatAsync = promisify(fstat);
const readAsync = promisify(read);
const writeAsync = promisify(write);
const openAsync = promisify(open);
const closeAsync = promisify(close);
const unlinkAsync = promisify(unlink);

async function readAt(fd: number, buf: Buffer, length: number, position: number): Promise<number> {
  return isMainThread
    ? (await readAsync(fd, buf, 0, length, position)).bytesRead
    : readSync(fd, buf, 0, length, position);
}

async function writeAll(fd: number, bytes: Buffer, position: number): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const n = isMainThread
      ? (await writeAsync(fd, bytes, done, bytes.length - done, position + done)).bytesWritten
      : writeSync(fd, bytes, done, bytes.length - done, position + done);
    done += n;
  }
}

async function unchanged(task: DeriveFileTask): Promise<boolean> {
  return signatureOf(await fstatAsync(task.fd, { bigint: true })) === task.signature;
}

export default async function deriveFile(task: DeriveFileTask): Promise<DeriveFileResult> {
  try {
    return await derive(task);
  } catch (err) {
    if (err instanceof OutputFailure) return { writeError: err.code };
    throw err;
  }
}

async function derive(task: DeriveFileTask): Promise<DeriveFileResult> {
  const before = await fstatAsync(task.fd, { bigint: true });
  if (signatureOf(before) !== task.signature) return CHANGED;
  if (!isMainThread && task.nice !== undefined) applyNice(task.nice);
  const size = Number(before.size);
  const derivation: Derivation = DERIVATIONS[task.derivation];
  const buf = Buffer.allocUnsafeSlow(Math.max(BLOCK, derivation.headBytes));
  const headLength = await readAt(task.fd, buf, Math.min(size, derivation.headBytes), 0);
  const start = derivation.start(buf.subarray(0, headLength));
  if (size - start > task.maxBytes) {
    // Judged on a head read while nothing changed, or not at all.
    return (await unchanged(task)) ? { tooLarge: size - start } : CHANGED;
  }
  const tmp = join(task.dir, `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`);
  const out = await output(() =>
    openAsync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600),
  );
  let keep = false;
  try {
    const hash = createHash("sha256");
    const first = buf.subarray(start, headLength);
    hash.update(first);
    await output(() => writeAll(out, first, 0));
    for (let pos = headLength; pos < size;) {
      const n = await readAt(task.fd, buf, Math.min(BLOCK, size - pos), pos);
      if (n === 0) return CHANGED; // truncated under us
      const block = buf.subarray(0, n);
      hash.update(block);
      await output(() => writeAll(out, block, pos - start));
      pos += n;
    }
    if (!(await unchanged(task))) return CHANGED;
    const w = await fstatAsync(out, { bigint: true });
    keep = true;
    return {
      sha256: hash.digest("hex"),
      size: size - start,
      tmp,
      written: `${w.dev}:${w.ino}:${w.size}:${w.mtimeNs}`,
    };
  } finally {
    // A failed close may have lost written bytes: the file is not kept, and that is a failure.
    let closeError: unknown;
    await closeAsync(out).catch((err: unknown) => (closeError = err ?? new Error("close")));
    if (!keep || closeError !== undefined) await unlinkAsync(tmp).catch(() => undefined);
    // eslint-disable-next-line no-unsafe-finally -- the result must not name a lost file
    if (closeError !== undefined) throw new OutputFailure(closeError);
  }
}
