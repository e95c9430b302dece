/**
 * Resource bytes of a sandboxed file (digest §3.4 step 4; D21): a file whose basename is
 * `SKILL.md` is served with its frontmatter removed (`bytes` source); any other file raw (`file`
 * source). Every read goes through one descriptor opened with O_NOFOLLOW|O_NONBLOCK and checked
 * with fstat, so a file swapped for a symlink or a FIFO after the sandbox ran is never followed
 * or blocked on. Size and sha256 always describe the bytes read through that descriptor.
 *
 * Hashes and stripped SKILL.md bodies are cached by content signature (dev, ino, size, mtime,
 * ctime in ns; D18), so repeated get_skill calls and every chunk of a SKILL.md pull cost one fstat
 * instead of a re-read (the upstream SDK re-hashes per chunk).
 */
import { createHash } from "node:crypto";
import { constants, fstatSync, type BigIntStats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { openedAtFd } from "../blob/opened-at.ts";
import { MAX_FRONTMATTER_BYTES, splitFrontmatter } from "./frontmatter.ts";

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const READ_BLOCK = 1024 * 1024;

export function isSkillMd(relPath: string): boolean {
  return relPath === "SKILL.md" || relPath.endsWith("/SKILL.md");
}

export function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

interface CacheEntry {
  sha256: string;
  /** Stripped SKILL.md body; absent for raw files (only the hash is kept). */
  bytes?: Buffer;
}

/** LRU over content signatures, bounded by entry count and by cached body bytes. */
export class ContentCache {
  private readonly map = new Map<string, CacheEntry>();
  private bodyBytes = 0;
  constructor(
    private readonly maxEntries = 4096,
    private readonly maxBodyBytes = 32 * 1024 * 1024,
  ) {}

  get(key: string): CacheEntry | undefined {
    const e = this.map.get(key);
    if (e) {
      this.map.delete(key);
      this.map.set(key, e);
    }
    return e;
  }

  set(key: string, entry: CacheEntry): void {
    if (entry.bytes && entry.bytes.length > this.maxBodyBytes / 4) {
      entry = { sha256: entry.sha256 }; // too big to keep: remember only the hash
    }
    this.delete(key);
    this.map.set(key, entry);
    this.bodyBytes += entry.bytes?.length ?? 0;
    for (const [k] of this.map) {
      if (this.map.size <= this.maxEntries && this.bodyBytes <= this.maxBodyBytes) break;
      this.delete(k);
    }
  }

  private delete(key: string): void {
    const old = this.map.get(key);
    if (!old) return;
    this.bodyBytes -= old.bytes?.length ?? 0;
    this.map.delete(key);
  }
}

function signature(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** An opened, fstat-checked regular file. `null` from `openRegular` = not servable (not_found). */
export interface OpenedFile {
  fh: FileHandle;
  size: number;
  key: string;
  /** ctime of the content signature `key` (ns since the epoch). */
  ctimeNs: bigint;
}

/** Opens after an atomic rename-over before giving up (each sees newer content). */
const OPEN_ATTEMPTS = 3;

/**
 * Opens `target`, a realpath the sandbox just checked, and makes sure the descriptor is that
 * file: a directory component swapped for a symlink between the check and the open would
 * otherwise let a read escape the package ("MUST stay inside realpath(root)"), so a descriptor
 * that resolves anywhere else is not servable (the same /proc check the blob engine runs).
 */
export async function openRegular(target: string): Promise<OpenedFile | null> {
  for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
    let fh: FileHandle;
    try {
      fh = await open(target, OPEN_FLAGS);
    } catch {
      return null; // vanished, swapped for a symlink (ELOOP), permissions...
    }
    try {
      const where = openedAtFd(fh.fd, target);
      if (where !== "same") {
        await fh.close();
        if (where === "replaced") continue; // renamed over after the open: open the new one
        return null;
      }
      // fstat of an open descriptor: a cheap syscall, not worth a thread-pool round trip.
      const st = fstatSync(fh.fd, { bigint: true });
      if (!st.isFile()) {
        await fh.close();
        return null;
      }
      return { fh, size: Number(st.size), key: signature(st), ctimeNs: st.ctimeNs };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }
  return null;
}

/** The content signature of `file` now (fstat of its descriptor). */
export function signatureNow(file: OpenedFile): string {
  return signature(fstatSync(file.fh.fd, { bigint: true }));
}

/** Re-reads `file`'s size and signature from its descriptor (after it changed under a read). */
export function restat(file: OpenedFile): void {
  const st = fstatSync(file.fh.fd, { bigint: true });
  [file.size, file.key, file.ctimeNs] = [Number(st.size), signature(st), st.ctimeNs];
}

/** Reads up to `length` bytes from `position`; shorter if the file shrank meanwhile. */
export async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/** Length of the frontmatter prefix of an open SKILL.md (0 when it has none). */
export async function frontmatterLength(file: OpenedFile): Promise<number> {
  const head = await readAt(file.fh, 0, Math.min(file.size, MAX_FRONTMATTER_BYTES + 1));
  return splitFrontmatter(head)?.bodyStart ?? 0;
}

/** The stripped SKILL.md body and its hash, through the cache. */
export async function skillMdBody(
  file: OpenedFile,
  cache: ContentCache,
): Promise<{ bytes: Buffer; sha256: string }> {
  const hit = cache.get(file.key);
  if (hit?.bytes) return { bytes: hit.bytes, sha256: hit.sha256 };
  const whole = await readAt(file.fh, 0, file.size);
  const split = splitFrontmatter(whole.subarray(0, MAX_FRONTMATTER_BYTES + 1));
  const bytes = split ? whole.subarray(split.bodyStart) : whole;
  const sha256 = sha256Hex(bytes);
  cache.set(file.key, { sha256, bytes });
  return { bytes, sha256 };
}

/**
 * sha256 of a whole raw file, streamed in 1 MiB blocks, through the cache. `size` is the number of
 * bytes actually hashed: it differs from `file.size` only if the file shrank while being read.
 */
export async function fileSha256(
  file: OpenedFile,
  cache: ContentCache,
  signal?: AbortSignal,
): Promise<{ sha256: string; size: number }> {
  const hit = cache.get(file.key);
  if (hit) return { sha256: hit.sha256, size: file.size };
  const hash = createHash("sha256");
  const buf = Buffer.allocUnsafe(Math.min(READ_BLOCK, Math.max(file.size, 1)));
  let pos = 0;
  while (pos < file.size) {
    signal?.throwIfAborted();
    const { bytesRead } = await file.fh.read(buf, 0, Math.min(buf.length, file.size - pos), pos);
    if (bytesRead === 0) break;
    hash.update(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
  const sha256 = hash.digest("hex");
  if (pos === file.size) cache.set(file.key, { sha256 });
  return { sha256, size: pos };
}
