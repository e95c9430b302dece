/**
 * The tool-result blob spool (D24): binary content items too big to travel inline are
 * written here, content-addressed by their sha256, and served back through `client:get_blob`.
 *
 * Layout: `<stateDir>/blobspool/<cid>` holds the raw bytes (cid = 64 lowercase hex sha256).
 * - Writes are atomic: bytes go to `.tmp-<random>`, are flushed, then renamed onto `<cid>`, so a
 *   crash mid-write leaves only a temp file, which is never served and is removed at the next start.
 * - The total size is bounded; least-recently-used blobs are evicted (the reference SDKs never
 *   evict, so their spool grows without limit). An evicted blob resolves to `gone`, which tells the
 *   Agent to call the tool again (D24).
 * - The index is rebuilt from disk at start (mtime = last use), so handles survive restarts.
 * - Concurrent puts of the same content share one write.
 * - The engine serves a blob only while its file hashes to its cid (once per content signature):
 *   a file something else rewrote is `gone` and forgotten, never served under its name.
 * - A write that fails for a disk fault (full, quota, I/O error) throws `StorageFaultError`
 *   (D57): logged once per episode, counted, and tried again by the next `put`.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { StorageHealth, type StorageFaultMetrics } from "../blob/storage-faults.ts";

/** A content id: exactly 64 lowercase hex characters (never a path fragment). */
export const CID_PATTERN = /^[0-9a-f]{64}$/;

export function isCid(value: unknown): value is string {
  return typeof value === "string" && CID_PATTERN.test(value);
}

/** Default bound on the spool's total size: 1 GiB. */
export const DEFAULT_SPOOL_MAX_BYTES = 1024 * 1024 * 1024;

const TEMP_PREFIX = ".tmp-";
/** Persisting last-use time costs a syscall; doing it at most this often per blob is plenty. */
const TOUCH_PERSIST_MS = 5_000;

interface Entry {
  size: number;
  /** Last time the new use was written to the file's mtime. */
  persistedAt: number;
}

export class SpoolFullError extends Error {
  constructor(
    readonly size: number,
    readonly maxBytes: number,
  ) {
    super(`blob of ${size} bytes is larger than the spool bound of ${maxBytes} bytes`);
    this.name = "SpoolFullError";
  }
}

export interface BlobSpoolOptions {
  /** The spool directory (`<stateDir>/blobspool`). */
  dir: string;
  maxBytes?: number;
  log: Logger;
  /** Counts disk faults (computer/metrics.ts). */
  metrics?: StorageFaultMetrics;
}

export class BlobSpool {
  readonly dir: string;
  readonly maxBytes: number;
  private readonly log: Logger;
  /** Map order = recency order: first = least recently used. */
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<void>>();
  private total = 0;
  private readonly health: StorageHealth;

  private constructor(opts: BlobSpoolOptions) {
    this.dir = opts.dir;
    this.maxBytes = opts.maxBytes ?? DEFAULT_SPOOL_MAX_BYTES;
    this.log = opts.log;
    this.health = new StorageHealth(
      "spool",
      "binary tool results over the inline budget travel inline only if they fit the Server's buffer",
      opts.log,
      opts.metrics,
    );
  }

  /** Opens (creating if needed) the spool, removes leftover temp files, rebuilds the index. */
  static async open(opts: BlobSpoolOptions): Promise<BlobSpool> {
    const spool = new BlobSpool(opts);
    await mkdir(spool.dir, { recursive: true, mode: 0o700 });
    await spool.rebuild();
    return spool;
  }

  get totalBytes(): number {
    return this.total;
  }

  get count(): number {
    return this.entries.size;
  }

  has(cid: string): boolean {
    return this.entries.has(cid);
  }

  /** Stores `bytes` (idempotent) and returns its cid; may evict older blobs to stay bounded. */
  async put(bytes: Uint8Array): Promise<string> {
    if (bytes.byteLength > this.maxBytes) throw new SpoolFullError(bytes.byteLength, this.maxBytes);
    const cid = createHash("sha256").update(bytes).digest("hex");
    if (this.entries.has(cid)) {
      this.touch(cid);
      return cid;
    }
    let write = this.pending.get(cid);
    if (!write) {
      write = this.write(cid, bytes).finally(() => this.pending.delete(cid));
      this.pending.set(cid, write);
    }
    await write;
    return cid;
  }

  /**
   * The file path of a stored blob, or null when it is not (or no longer) in the spool. The cid
   * is validated before any path is built. Marks the blob as recently used.
   */
  async locate(cid: string): Promise<string | null> {
    if (!isCid(cid)) return null;
    const path = join(this.dir, cid);
    if (!this.entries.has(cid)) {
      // Another Computer sharing this state directory may have written it since our start.
      const st = await stat(path).catch(() => null);
      if (!st?.isFile()) return null;
      this.add(cid, st.size, Date.now());
      await this.evict(cid);
      return this.entries.has(cid) ? path : null;
    }
    this.touch(cid);
    return path;
  }

  /**
   * Drops a blob the engine found unservable (its file vanished, or holds other bytes than its
   * name says): it is `gone` from now on, and a later `put` of the content writes it afresh.
   */
  forget(cid: string): void {
    const entry = this.entries.get(cid);
    if (!entry || !isCid(cid)) return;
    this.entries.delete(cid);
    this.total -= entry.size;
    rm(join(this.dir, cid), { force: true }).catch((err: unknown) =>
      this.log.warn({ err, cid }, "spool: could not remove a forgotten blob"),
    );
  }

  private async write(cid: string, bytes: Uint8Array): Promise<void> {
    const tmp = join(this.dir, `${TEMP_PREFIX}${randomBytes(8).toString("hex")}`);
    try {
      const fh = await open(tmp, "wx", 0o600);
      try {
        await fh.writeFile(bytes);
        // Durable before visible: the rename must never expose a file whose bytes are not down.
        await fh.datasync();
      } finally {
        await fh.close();
      }
      await rename(tmp, join(this.dir, cid));
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw this.health.failed(err);
    }
    this.health.ok();
    this.add(cid, bytes.byteLength, Date.now());
    await this.evict(cid);
  }

  private add(cid: string, size: number, now: number): void {
    const old = this.entries.get(cid);
    if (old) this.total -= old.size;
    this.entries.delete(cid);
    this.entries.set(cid, { size, persistedAt: now });
    this.total += size;
  }

  private touch(cid: string): void {
    const entry = this.entries.get(cid);
    if (!entry) return;
    this.entries.delete(cid);
    this.entries.set(cid, entry);
    const now = Date.now();
    if (now - entry.persistedAt < TOUCH_PERSIST_MS) return;
    entry.persistedAt = now;
    const seconds = now / 1000;
    utimes(join(this.dir, cid), seconds, seconds).catch(() => undefined);
  }

  /** Removes least-recently-used blobs until the bound holds; never the one just stored. */
  private async evict(keep: string): Promise<void> {
    for (const [cid, entry] of this.entries) {
      if (this.total <= this.maxBytes) return;
      if (cid === keep) continue;
      this.entries.delete(cid);
      this.total -= entry.size;
      // An open reader keeps its file descriptor; the next pull reports `gone`.
      await rm(join(this.dir, cid), { force: true }).catch((err: unknown) =>
        this.log.warn({ err, cid }, "spool: could not remove an evicted blob"),
      );
      this.log.debug({ cid, size: entry.size }, "spool: evicted");
    }
  }

  private async rebuild(): Promise<void> {
    const found: { cid: string; size: number; mtimeMs: number }[] = [];
    for (const name of await readdir(this.dir)) {
      const path = join(this.dir, name);
      if (name.startsWith(TEMP_PREFIX)) {
        // A write that never reached its rename: never servable, so just clean it up.
        await rm(path, { force: true }).catch(() => undefined);
        continue;
      }
      if (!isCid(name)) continue;
      const st = await stat(path).catch(() => null);
      if (st?.isFile()) found.push({ cid: name, size: st.size, mtimeMs: st.mtimeMs });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const f of found) this.add(f.cid, f.size, f.mtimeMs);
    if (found.length > 0) await this.evict("");
    this.log.debug({ count: this.entries.size, bytes: this.total }, "spool: index rebuilt");
  }
}
