/**
 * Resource bytes of a sandboxed file (D21): a file whose basename is
 * `SKILL.md` is served with its frontmatter removed (a derived resource, computer/blob/derived.ts
 * produces and keeps those bytes); any other file raw. Every read here goes through one
 * descriptor opened with O_NOFOLLOW|O_NONBLOCK and checked with fstat, so a file swapped for a
 * symlink or a FIFO after the sandbox ran is never followed or blocked on. Size and sha256 always
 * describe the bytes read through that descriptor.
 */
import { constants, fstatSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import type { DeriveLimits } from "../blob/derived.ts";
import { descriptorLocation, signatureOf } from "../blob/descriptors.ts";
import type { ComputerConfig } from "../contracts.ts";
import { MAX_FRONTMATTER_BYTES } from "./frontmatter.ts";

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

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
      const where = descriptorLocation(fh.fd, target);
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
      return { fh, size: Number(st.size), key: signatureOf(st), ctimeNs: st.ctimeNs };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }
  return null;
}

/** The content signature of `file` now (fstat of its descriptor). */
export function signatureNow(file: OpenedFile): string {
  return signatureOf(fstatSync(file.fh.fd, { bigint: true }));
}

/** Re-reads `file`'s size and signature from its descriptor (after it changed under a read). */
export function restat(file: OpenedFile): void {
  const st = fstatSync(file.fh.fd, { bigint: true });
  [file.size, file.key, file.ctimeNs] = [Number(st.size), signatureOf(st), st.ctimeNs];
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

/**
 * How SKILL.md bodies are derived for this configuration: over the hard cap they are too large;
 * a source that could hold a body small enough to inline (budget and buffer, plus the largest
 * frontmatter) is derived in memory, so get_skill has the body's bytes; larger ones go to files.
 */
export function skillMdLimits(
  config: Pick<ComputerConfig, "maxSize" | "inlineBudget" | "maxHttpBufferSize">,
): DeriveLimits {
  const inline = Math.min(config.inlineBudget, config.maxHttpBufferSize);
  return { maxBytes: config.maxSize, inMemoryUpTo: inline + MAX_FRONTMATTER_BYTES + 1 };
}
