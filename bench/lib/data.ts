/**
 * Deterministic resource content. Every 4 KiB page starts with its own page index and the content's
 * seed, so no two chunks of a resource (all chunks are >= 16 KiB) and no two versions of it have the
 * same bytes: a chunk placed at the wrong offset, or served from the wrong version, cannot pass
 * its digest check by coincidence. The rest of each page is an AES-CTR keystream of the seed.
 */
import { createCipheriv, createHash } from "node:crypto";
import { closeSync, openSync, readSync, writeSync } from "node:fs";
import { MiB } from "./stats.ts";

const PAGE = 4096;
const BLOCK = MiB;

function keystreamBlock(seed: string): Buffer {
  const key = createHash("sha256").update(`bench-key:${seed}`).digest();
  const cipher = createCipheriv("aes-256-ctr", key, Buffer.alloc(16));
  return cipher.update(Buffer.alloc(BLOCK));
}

const blockCache = new Map<string, Buffer>();
function baseBlock(seed: string): Buffer {
  let b = blockCache.get(seed);
  if (!b) {
    b = keystreamBlock(seed);
    if (blockCache.size > 64) blockCache.clear();
    blockCache.set(seed, b);
  }
  return b;
}

/** Fills `out` with the bytes of content `seed` at [offset, offset + out.length). */
export function contentAt(seed: string, offset: number, out: Buffer): Buffer {
  const base = baseBlock(seed);
  const end = offset + out.length;
  // The keystream repeats every BLOCK bytes; copy it in (at most a few wraps).
  for (let pos = offset; pos < end;) {
    const inBlock = pos % BLOCK;
    const n = Math.min(BLOCK - inBlock, end - pos);
    base.copy(out, pos - offset, inBlock, inBlock + n);
    pos += n;
  }
  // Then stamp each page header (page index, seed tag) where it overlaps the range.
  const header = Buffer.allocUnsafe(8);
  header.writeUInt32BE(seedTag(seed), 4);
  for (let page = Math.floor(offset / PAGE); page * PAGE < end; page++) {
    const start = page * PAGE;
    header.writeUInt32BE(page >>> 0, 0);
    const from = Math.max(start, offset);
    const to = Math.min(start + header.length, end);
    if (from < to) header.copy(out, from - offset, from - start, to - start);
  }
  return out;
}

const tags = new Map<string, number>();
function seedTag(seed: string): number {
  let t = tags.get(seed);
  if (t === undefined) {
    t = createHash("sha256").update(`tag:${seed}`).digest().readUInt32BE(0);
    if (tags.size > 1024) tags.clear();
    tags.set(seed, t);
  }
  return t;
}

/**
 * Writes `size` bytes of content `seed` to `path` (truncating), 1 MiB at a time through one reused
 * buffer, and returns its sha256. `flags` "r+" rewrites in place without truncation. A `prefix`
 * (a SKILL.md's frontmatter) is written first and is not part of the content or its sha256.
 */
export function writeContent(
  path: string,
  seed: string,
  size: number,
  flags: "w" | "r+" = "w",
  prefix = "",
): string {
  const fd = openSync(path, flags);
  const hash = createHash("sha256");
  const buf = Buffer.allocUnsafe(BLOCK);
  const head = Buffer.from(prefix);
  try {
    writeSync(fd, head, 0, head.length, 0);
    for (let off = 0; off < size; off += BLOCK) {
      const n = Math.min(BLOCK, size - off);
      const view = buf.subarray(0, n);
      contentAt(seed, off, view);
      hash.update(view);
      writeSync(fd, view, 0, n, head.length + off);
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

/** sha256 of content `seed` of `size` bytes, without touching the disk. */
export function contentDigest(seed: string, size: number): string {
  const hash = createHash("sha256");
  const buf = Buffer.allocUnsafe(BLOCK);
  for (let off = 0; off < size; off += BLOCK) {
    const n = Math.min(BLOCK, size - off);
    hash.update(contentAt(seed, off, buf.subarray(0, n)));
  }
  return hash.digest("hex");
}

/** Whole-file sha256 and the sha256 of every `chunkBytes` chunk, read from disk. */
export function fileDigests(
  path: string,
  chunkBytes: number,
): { sha256: string; size: number; chunks: string[] } {
  const fd = openSync(path, "r");
  const whole = createHash("sha256");
  const chunks: string[] = [];
  const buf = Buffer.allocUnsafe(chunkBytes);
  let size = 0;
  try {
    for (;;) {
      let filled = 0;
      while (filled < chunkBytes) {
        const n = readSync(fd, buf, filled, chunkBytes - filled, size + filled);
        if (n === 0) break;
        filled += n;
      }
      if (filled === 0) break;
      const view = buf.subarray(0, filled);
      whole.update(view);
      chunks.push(createHash("sha256").update(view).digest("hex"));
      size += filled;
      if (filled < chunkBytes) break;
    }
  } finally {
    closeSync(fd);
  }
  return { sha256: whole.digest("hex"), size, chunks };
}
