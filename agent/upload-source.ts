/**
 * What an upload sends, as the sender needs it: its size and sha256 known before the first
 * chunk (the first chunk declares both, and the Computer checks them), then its bytes read by
 * offset, any number of times (a chunk the Server refused is sent again, a restart reads from 0).
 *
 * - a Buffer: hashed in place, chunks are views of it;
 * - a file path: hashed by reading it once, then read chunk by chunk at the offsets sent, so
 *   memory stays the chunks in flight whatever the file's size;
 * - a stream (or any async iterable of bytes): spooled while it is hashed, in memory up to
 *   `SPOOL_MEMORY_BYTES`, beyond that into a temporary file of its own (mode 0600, removed when
 *   the upload ends), since its sha256 is due before its first byte is sent.
 */
import { createHash } from "node:crypto";
import { mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { abortError, UploadError } from "./errors.ts";

/** A Buffer (or Uint8Array), a file path, or a stream / async iterable of bytes. */
export type UploadSource = Uint8Array | string | AsyncIterable<Uint8Array | string>;

/** A stream is kept in memory up to this many bytes; a longer one is spooled to a file. */
export const SPOOL_MEMORY_BYTES = 8 * 1024 * 1024;
/** The block a file is read in while it is hashed or spooled. */
const HASH_BLOCK_BYTES = 1024 * 1024;

/** The bytes of an upload, hashed. */
export interface UploadBody {
  readonly size: number;
  /** Lowercase hex sha256 of all `size` bytes. */
  readonly sha256: string;
  /** `len` bytes from `offset` (a view or a fresh buffer: the sender does not write to it). */
  read(offset: number, len: number): Promise<Buffer>;
  /** Closes the file and removes a spool. */
  close(): Promise<void>;
  /** A file's size and mtime are still what they were when it was hashed (absent: always). */
  unchanged?(): Promise<boolean>;
}

export interface BodyOptions {
  signal?: AbortSignal;
  /** Where a stream longer than `SPOOL_MEMORY_BYTES` is spooled. Default the OS temp dir. */
  spoolDir?: string;
}

/** Hashes `source` (spooling a stream) and returns its body; nothing is sent yet. */
export async function openBody(source: UploadSource, opts: BodyOptions = {}): Promise<UploadBody> {
  if (typeof source === "string") return fileBody(source, opts.signal);
  if (source instanceof Uint8Array) return bufferBody(source);
  return spoolBody(source, opts);
}

function bufferBody(bytes: Uint8Array): UploadBody {
  const buf = Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const sha256 = createHash("sha256").update(buf).digest("hex");
  return {
    size: buf.length,
    sha256,
    read: (offset, len) => Promise.resolve(buf.subarray(offset, offset + len)),
    close: () => Promise.resolve(),
  };
}

/** Reads exactly `len` bytes at `offset`; fewer means the file shrank under the upload. */
async function readAt(fh: FileHandle, offset: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, offset + got);
    if (bytesRead === 0) {
      throw new UploadError("source_changed", "the file became shorter while it was uploaded");
    }
    got += bytesRead;
  }
  return buf;
}

async function fileBody(path: string, signal: AbortSignal | undefined): Promise<UploadBody> {
  const fh = await open(path, "r");
  try {
    const st = await fh.stat();
    if (!st.isFile()) {
      const code = st.isDirectory() ? "EISDIR" : "EINVAL";
      throw Object.assign(new Error(`${code}: not a regular file, read '${path}'`), { code, path });
    }
    // The next block is read while this one is hashed: the pass costs the larger of the two,
    // not their sum (the digest is due before the first byte is sent).
    const hash = createHash("sha256");
    const len = Math.min(HASH_BLOCK_BYTES, Math.max(1, st.size));
    const blocks = [Buffer.allocUnsafe(len), Buffer.allocUnsafe(len)];
    let size = 0;
    let next = fh.read(blocks[0]!, 0, len, 0);
    for (let i = 0; ; i ^= 1) {
      const { bytesRead, buffer } = await next;
      if (bytesRead === 0) break;
      if (signal?.aborted) throw abortError(signal);
      size += bytesRead;
      next = fh.read(blocks[i ^ 1]!, 0, len, size);
      // Awaited below, unless an abort ends the pass first: then nothing waits for it.
      next.catch(() => undefined);
      hash.update(buffer.subarray(0, bytesRead));
    }
    return {
      size,
      sha256: hash.digest("hex"),
      read: (offset, len) => readAt(fh, offset, len),
      close: () => fh.close(),
      unchanged: async () => {
        const now = await fh.stat();
        return now.size === size && now.mtimeMs === st.mtimeMs;
      },
    };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

async function spoolBody(
  source: AsyncIterable<Uint8Array | string>,
  opts: BodyOptions,
): Promise<UploadBody> {
  const hash = createHash("sha256");
  const held: Buffer[] = [];
  let size = 0;
  let spool: { dir: string; fh: FileHandle } | undefined;
  const drop = async (): Promise<void> => {
    if (!spool) return;
    await spool.fh.close().catch(() => undefined);
    await rm(spool.dir, { recursive: true, force: true });
  };
  try {
    for await (const piece of source) {
      if (opts.signal?.aborted) throw abortError(opts.signal);
      const bytes = typeof piece === "string" ? Buffer.from(piece) : Buffer.from(piece);
      hash.update(bytes);
      if (!spool && size + bytes.length > SPOOL_MEMORY_BYTES) {
        const dir = await mkdtemp(join(opts.spoolDir ?? tmpdir(), "a2c-upload-"));
        spool = { dir, fh: await open(join(dir, "spool"), "wx+", 0o600) };
        for (const b of held.splice(0)) await writeAll(spool.fh, b);
      }
      if (spool) await writeAll(spool.fh, bytes);
      else held.push(bytes);
      size += bytes.length;
    }
  } catch (err) {
    await drop();
    throw err;
  }
  const sha256 = hash.digest("hex");
  if (!spool) {
    const buf = Buffer.concat(held, size);
    return { size, sha256, read: (o, n) => Promise.resolve(buf.subarray(o, o + n)), close: drop };
  }
  const fh = spool.fh;
  return { size, sha256, read: (offset, len) => readAt(fh, offset, len), close: drop };
}

/** Appends all of `bytes` (a file handle's write may take fewer). */
async function writeAll(fh: FileHandle, bytes: Buffer): Promise<void> {
  let off = 0;
  while (off < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off);
    off += bytesWritten;
  }
}
