/**
 * An optional local content-addressed cache: `<dir>/<sha[0..2]>/<sha256>`. When a producer's
 * answer (or the first chunk) names a sha256 the cache holds, the bytes come from disk and no more
 * chunks are pulled. Entries are verified on every hit (a corrupt entry is removed and the blob is
 * pulled again) and written atomically (temp file + fsync + rename), so concurrent writers of the
 * same content are harmless. No eviction: the directory belongs to the caller.
 */
import { createHash, randomBytes } from "node:crypto";
import { copyFile, mkdir, open, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { silentLogger, type AgentLogger } from "./logger.ts";
import type { Sink } from "./sinks.ts";

const HEX64 = /^[0-9a-f]{64}$/;
const READ_BYTES = 1024 * 1024;

export interface CacheEntry {
  path: string;
  size: number;
  sha256: string;
}

export interface BlobCacheOptions {
  /** Where a removed corrupt entry or a failed store is reported. Default: nowhere. */
  logger?: AgentLogger;
}

export class BlobCache {
  private readonly log: AgentLogger;

  constructor(
    readonly dir: string,
    opts: BlobCacheOptions = {},
  ) {
    this.log = opts.logger ?? silentLogger;
  }

  /** Where the entry for `sha256` lives (whether or not it exists). */
  pathFor(sha256: string): string {
    if (!HEX64.test(sha256)) throw new TypeError("sha256 must be 64 lowercase hex characters");
    return join(this.dir, sha256.slice(0, 2), sha256);
  }

  /** A verified entry, or null. A corrupt entry is deleted. */
  async lookup(sha256: string, size?: number): Promise<CacheEntry | null> {
    const path = this.pathFor(sha256);
    let st;
    try {
      st = await stat(path);
    } catch {
      return null;
    }
    if (!st.isFile() || (size !== undefined && st.size !== size)) return null;
    if ((await hashFile(path)) !== sha256) {
      this.log.warn({ sha256 }, "cache entry failed verification; removed");
      await unlink(path).catch(() => undefined);
      return null;
    }
    return { path, size: st.size, sha256 };
  }

  /** Copies a verified entry into a sink, `chunkBytes` at a time (bounded memory). */
  async feed<R>(entry: CacheEntry, sink: Sink<R>, chunkBytes: number): Promise<void> {
    const fh = await open(entry.path, "r");
    try {
      for (let offset = 0; offset < entry.size;) {
        const len = Math.min(chunkBytes, entry.size - offset);
        const bytes = Buffer.allocUnsafe(len);
        let got = 0;
        while (got < len) {
          const { bytesRead } = await fh.read(bytes, got, len - got, offset + got);
          if (bytesRead === 0) throw new Error("cache entry shrank while being read");
          got += bytesRead;
        }
        await sink.commit(offset, bytes);
        offset += len;
      }
    } finally {
      await fh.close();
    }
  }

  /** Stores a verified pull's result (a Buffer, or a file `{path}`); failures only log. */
  async store(sha256: string, value: unknown): Promise<void> {
    let tmp: string | undefined;
    try {
      const dest = this.pathFor(sha256);
      await mkdir(join(this.dir, sha256.slice(0, 2)), { recursive: true, mode: 0o700 });
      tmp = `${dest}.tmp-${randomBytes(4).toString("hex")}`;
      if (Buffer.isBuffer(value)) {
        await writeFile(tmp, value, { mode: 0o600 });
      } else if (value && typeof (value as { path?: unknown }).path === "string") {
        await copyFile((value as { path: string }).path, tmp);
      } else {
        return;
      }
      const fh = await open(tmp, "r+");
      await fh.sync();
      await fh.close();
      await rename(tmp, dest);
    } catch (err) {
      this.log.warn({ err: String(err), sha256 }, "could not store blob in cache");
      if (tmp !== undefined) await unlink(tmp).catch(() => undefined);
    }
  }
}

async function hashFile(path: string): Promise<string> {
  const h = createHash("sha256");
  const fh = await open(path, "r");
  try {
    const buf = Buffer.allocUnsafe(READ_BYTES);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await fh.close();
  }
  return h.digest("hex");
}
