/**
 * Derived resources: bytes that are a function of a file's content (a SKILL.md body with its
 * frontmatter stripped), held to the same rule as raw files (D18): the bytes served under a
 * sha256 belong to one content, also while the file is rewritten, and a chunk costs the same
 * whatever the resource's size.
 *
 * - Produced once per content signature (dev, ino, size, mtime, ctime; as hash-cache.ts keys raw
 *   files) and source path; concurrent requests for one signature share one production.
 * - Validated after the read: the source is opened (O_NOFOLLOW, the /proc check of the engine),
 *   its signature must be the one seen by lstat, and it must still be that after the last byte
 *   was read; otherwise the bytes are discarded and the lookup starts again, a bounded number of
 *   times, then `gone`. A signature whose ctime is younger than the settle window is not trusted
 *   yet (a write(2) stamps the times before it copies; engine.ts says more).
 * - Small sources (up to the caller's `inMemoryUpTo`, enough to inline a body) are derived on
 *   the main thread and kept in memory, within a byte budget. Larger ones are derived by a worker
 *   task (derive-file.ts) that streams the body into a content-addressed file named by its
 *   sha256 in `dir` while hashing it; the engine then serves that file through its ordinary
 *   descriptor path, at a raw file's cost per chunk, with no body in the heap. The file's
 *   signature is recorded in the engine's hash cache, which the engine checks every
 *   content-addressed file against.
 * - The files are a cache, never a handle's only way to the bytes: they are bounded in total
 *   size (least recently used evicted), removed at start, and made again from the source when
 *   missing. A file that went missing or is not what its name says is `forget`-ten by the engine
 *   (BlobSource `discard`), which then asks the producer again.
 * Two Computers sharing a state directory share this folder: its files are named by content, so
 * one's file serves the other, and one's cleaning or eviction makes the other produce again.
 * - A file that cannot be written for a disk fault (full, quota, I/O error) is answered
 *   `storage_full` / `storage_error` (4017 at mint, 4018 at pull; D57), logged once per episode
 *   and counted; the next production tries the disk again, so service resumes by itself.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  open,
  readSync,
  type BigIntStats,
} from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { BlobSource } from "../contracts.ts";
import type { ComputerMetrics } from "../metrics.ts";
import deriveFile, {
  DERIVATIONS,
  type DerivationName,
  type DeriveFileResult,
} from "../workers/derive-file.ts";
import type { HashPool } from "../workers/pool.ts";
import { DEFAULT_SETTLE_MS } from "./engine.ts";
import type { HashCache } from "./hash-cache.ts";
import { descriptorLocation, signatureOf } from "./descriptors.ts";
import { shareFlight } from "./single-flight.ts";
import { StorageFaultError, StorageHealth, type StorageReason } from "./storage-faults.ts";

/** Bound on the derived files' total size (at least the hard cap: see `DerivedStoreOptions`). */
export const DEFAULT_DERIVED_MAX_BYTES = 1024 * 1024 * 1024;
/** Bound on the bytes of bodies kept in memory. */
export const DEFAULT_DERIVED_MEMORY_BYTES = 16 * 1024 * 1024;
/** Index entries (signatures) kept per tier; an entry is ~200 bytes. */
const MAX_KEYS = 10_000;
/** Lookups after the source changed under a production, before `gone`. */
const MAX_ATTEMPTS = 5;
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export interface DerivedStoreOptions {
  /** The folder of derived files (`<stateDir>/derived`); emptied by `open`, made on first use. */
  dir: string;
  /** Records the derived files' digests; the engine checks content-addressed files with it. */
  hashes: HashCache;
  /** Worker pool for file-tier productions; `null` = inline (`--workers 0`). */
  pool: HashPool | null;
  /** Bound on the derived files' total size; the newest file is kept even when larger. */
  maxBytes?: number;
  memoryBytes?: number;
  /** Minimum age (ms) of a source's ctime before its bytes are trusted (engine.ts). */
  settleMs?: number;
  metrics?: ComputerMetrics;
  log?: Logger;
}

/** Derived bytes of one content: in memory, or in a file the engine serves. */
export type Derived = { sha256: string; size: number } & ({ bytes: Buffer } | { path: string });

export type DeriveResult =
  | { ok: true; derived: Derived }
  | { ok: false; reason: "gone" | "forbidden" | StorageReason }
  | { ok: false; reason: "too_large"; size: number };

export interface DeriveLimits {
  /** Derived bytes over this are `too_large` (the hard cap). */
  maxBytes: number;
  /** Sources up to this size are derived in memory. */
  inMemoryUpTo: number;
}

const CHANGED = Symbol("changed");
const GONE = { ok: false, reason: "gone" } as const;

interface FileEntry {
  size: number;
  /** Index keys that name this file. */
  keys: Set<string>;
}

export class DerivedStore {
  readonly dir: string;
  readonly #hashes: HashCache;
  readonly #pool: HashPool | null;
  readonly #maxBytes: number;
  readonly #memoryBudget: number;
  readonly #settleMs: number;
  readonly #metrics: ComputerMetrics | undefined;
  readonly #log: Logger | undefined;
  readonly #health: StorageHealth;
  /** key → body; map order = recency. */
  readonly #memory = new Map<string, { sha256: string; bytes: Buffer }>();
  #memoryBytes = 0;
  /** key → sha256 of a derived file; map order = recency. */
  readonly #keys = new Map<string, string>();
  /** sha256 → derived file; map order = recency. */
  readonly #files = new Map<string, FileEntry>();
  #fileBytes = 0;
  readonly #flights = new Map<string, Promise<DeriveResult | typeof CHANGED>>();
  #dirReady: Promise<unknown> | undefined;
  /** Productions that ran to the end, by tier (tests prove single flight with it). */
  readonly productions = { memory: 0, file: 0 };

  private constructor(o: DerivedStoreOptions) {
    this.dir = o.dir;
    this.#hashes = o.hashes;
    this.#pool = o.pool;
    this.#maxBytes = o.maxBytes ?? DEFAULT_DERIVED_MAX_BYTES;
    this.#memoryBudget = o.memoryBytes ?? DEFAULT_DERIVED_MEMORY_BYTES;
    this.#settleMs = o.settleMs ?? DEFAULT_SETTLE_MS;
    this.#metrics = o.metrics;
    this.#log = o.log;
    this.#health = new StorageHealth(
      "derived",
      "SKILL.md bodies too large to keep in memory are refused",
      o.log,
      o.metrics,
    );
  }

  /** A store whose folder is emptied now (its files are unreachable without this index). */
  static async open(o: DerivedStoreOptions): Promise<DerivedStore> {
    await rm(o.dir, { recursive: true, force: true });
    return new DerivedStore(o);
  }

  /** Bytes of derived files on disk, and of bodies in memory. */
  get bytes(): { files: number; memory: number } {
    return { files: this.#fileBytes, memory: this.#memoryBytes };
  }

  /**
   * The derived bytes of the file at `path` as it is now. `path` is a realpath a sandbox has
   * just checked; a descriptor that resolves elsewhere is `forbidden`.
   */
  async get(path: string, derivation: DerivationName, limits: DeriveLimits): Promise<DeriveResult> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let st: BigIntStats | undefined;
      try {
        st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
      } catch {
        return GONE; // ENOTDIR, EACCES...: not servable now
      }
      if (!st?.isFile()) return GONE;
      const key = `${derivation}\0${path}\0${signatureOf(st)}`;
      const hit = this.#lookup(key);
      if (hit) return { ok: true, derived: hit };
      const seen = st;
      const out = await shareFlight(this.#flights, key, () =>
        this.#produce(path, seen, key, derivation, limits),
      );
      if (out !== CHANGED) return out;
    }
    this.#log?.warn("derived source kept changing while being read; answering gone");
    return GONE;
  }

  /** Where the engine finds `d`'s bytes; a derived file it cannot serve is forgotten. */
  source(d: Derived, mimeType: string): BlobSource {
    if ("bytes" in d) return { type: "bytes", bytes: d.bytes, mimeType, sha256: d.sha256 };
    const discard = () => this.forget(d.sha256);
    return { type: "file", path: d.path, mimeType, sha256: d.sha256, discard };
  }

  /** Drops a derived file (missing, or not holding its name's content): made again on demand. */
  forget(sha256: string): void {
    const file = this.#files.get(sha256);
    if (file) this.#removeFile(sha256, file);
  }

  #lookup(key: string): Derived | undefined {
    const mem = this.#memory.get(key);
    if (mem) {
      touch(this.#memory, key, mem);
      return { sha256: mem.sha256, size: mem.bytes.length, bytes: mem.bytes };
    }
    const sha256 = this.#keys.get(key);
    const file = sha256 === undefined ? undefined : this.#files.get(sha256);
    if (sha256 === undefined || file === undefined) return undefined;
    touch(this.#keys, key, sha256);
    touch(this.#files, sha256, file);
    return { sha256, size: file.size, path: join(this.dir, sha256) };
  }

  async #produce(
    path: string,
    seen: BigIntStats,
    key: string,
    derivation: DerivationName,
    limits: DeriveLimits,
  ): Promise<DeriveResult | typeof CHANGED> {
    const ageMs = Date.now() - Number(seen.ctimeNs / 1_000_000n);
    if (ageMs < this.#settleMs) {
      await sleep(this.#settleMs - Math.max(0, ageMs));
      return CHANGED;
    }
    let fd: number;
    try {
      fd = await openFd(path);
    } catch {
      return GONE;
    }
    try {
      const where = descriptorLocation(fd, path);
      if (where !== "same")
        return where === "replaced" ? CHANGED : { ok: false, reason: "forbidden" };
      const st = fstatSync(fd, { bigint: true });
      const signature = signatureOf(st);
      if (signature !== signatureOf(seen)) return CHANGED;
      return Number(st.size) <= limits.inMemoryUpTo
        ? this.#deriveInMemory(fd, st, key, derivation, limits.maxBytes)
        : await this.#deriveToFile(fd, st, key, derivation, limits.maxBytes);
    } finally {
      closeSync(fd);
    }
  }

  /** A small source: read whole (page-cache reads of a few hundred KiB), checked, kept. */
  #deriveInMemory(
    fd: number,
    st: BigIntStats,
    key: string,
    derivation: DerivationName,
    maxBytes: number,
  ): DeriveResult | typeof CHANGED {
    const size = Number(st.size);
    const whole = Buffer.allocUnsafe(size);
    for (let got = 0; got < size;) {
      const n = readSync(fd, whole, got, size - got, got);
      if (n === 0) return CHANGED; // shrank under us
      got += n;
    }
    if (signatureOf(fstatSync(fd, { bigint: true })) !== signatureOf(st)) return CHANGED;
    const d = DERIVATIONS[derivation];
    // A copy: the frontmatter is not kept alive behind the body.
    const bytes = Buffer.from(whole.subarray(d.start(whole.subarray(0, d.headBytes))));
    if (bytes.length > maxBytes) return { ok: false, reason: "too_large", size: bytes.length };
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    this.productions.memory++;
    this.#metrics?.derivedProductions.inc({ tier: "memory" });
    this.#keepInMemory(key, sha256, bytes);
    return { ok: true, derived: { sha256, size: bytes.length, bytes } };
  }

  async #deriveToFile(
    fd: number,
    st: BigIntStats,
    key: string,
    derivation: DerivationName,
    maxBytes: number,
  ): Promise<DeriveResult | typeof CHANGED> {
    this.#dirReady ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      this.#dirReady = undefined; // tried again by the next production
      throw err;
    });
    try {
      await this.#dirReady;
    } catch (err) {
      return this.#writeFailed(err);
    }
    const task = {
      fd,
      signature: signatureOf(st),
      derivation,
      dir: this.dir,
      maxBytes,
      nice: this.#hashes.hashNice,
    };
    try {
      const r = this.#pool
        ? await this.#pool.derive(task, Number(st.size))
        : await deriveFile(task);
      if ("changed" in r) return CHANGED;
      if ("tooLarge" in r) return { ok: false, reason: "too_large", size: r.tooLarge };
      if ("writeError" in r) {
        return this.#writeFailed(Object.assign(new Error(r.writeError), { code: r.writeError }));
      }
      let derived: Derived;
      try {
        derived = await this.#commit(key, r);
      } catch (err) {
        await rm(r.tmp, { force: true }).catch(() => undefined);
        throw err;
      }
      this.#health.ok();
      this.productions.file++;
      this.#metrics?.derivedProductions.inc({ tier: "file" });
      return { ok: true, derived };
    } catch (err) {
      return this.#writeFailed(err);
    }
  }

  /**
   * A production's write failed: the folder removed under us (another Computer sharing it
   * started) is made again; a disk fault is answered as what it is (D57); anything else throws.
   */
  #writeFailed(err: unknown): DeriveResult | typeof CHANGED {
    if ((err as NodeJS.ErrnoException | null)?.code === "ENOENT") {
      this.#dirReady = undefined;
      return CHANGED;
    }
    const fault = this.#health.failed(err);
    if (fault instanceof StorageFaultError) return { ok: false, reason: fault.reason };
    throw err;
  }

  /** Names a finished temp file by its sha256 (once per content) and indexes it under `key`. */
  async #commit(key: string, r: Extract<DeriveFileResult, { tmp: string }>): Promise<Derived> {
    const path = join(this.dir, r.sha256);
    if (this.#files.has(r.sha256)) await rm(r.tmp, { force: true });
    else {
      await rename(r.tmp, path);
      // Nothing wrote it since its last byte (same inode, size and mtime; the rename moved only
      // its ctime): its signature now names the content that was hashed.
      const st = await stat(path, { bigint: true });
      if (`${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}` === r.written) {
        this.#hashes.record(signatureOf(st), r.sha256);
      }
    }
    // Checked again: another source with the same body may have been committed meanwhile.
    if (!this.#files.has(r.sha256)) {
      this.#files.set(r.sha256, { size: r.size, keys: new Set() });
      this.#fileBytes += r.size;
    }
    this.#link(key, r.sha256);
    this.#evictFiles(r.sha256);
    this.#metrics?.derivedBytes.set({ tier: "file" }, this.#fileBytes);
    return { sha256: r.sha256, size: r.size, path };
  }

  #keepInMemory(key: string, sha256: string, bytes: Buffer): void {
    if (bytes.length > this.#memoryBudget) return;
    this.#memory.set(key, { sha256, bytes });
    this.#memoryBytes += bytes.length;
    for (const [k, e] of this.#memory) {
      if (this.#memoryBytes <= this.#memoryBudget && this.#memory.size <= MAX_KEYS) break;
      this.#memory.delete(k);
      this.#memoryBytes -= e.bytes.length;
    }
    this.#metrics?.derivedBytes.set({ tier: "memory" }, this.#memoryBytes);
  }

  #link(key: string, sha256: string): void {
    this.#files.get(sha256)?.keys.add(key);
    touch(this.#keys, key, sha256);
    for (const [k, sha] of this.#keys) {
      if (this.#keys.size <= MAX_KEYS) break;
      this.#keys.delete(k);
      const file = this.#files.get(sha);
      file?.keys.delete(k);
      // No signature names it any more: nothing can reach it.
      if (file && file.keys.size === 0) this.#removeFile(sha, file);
    }
  }

  /** Least recently used files go until the bound holds; never `keep` (the one just made). */
  #evictFiles(keep: string): void {
    for (const [sha256, file] of this.#files) {
      if (this.#fileBytes <= this.#maxBytes) return;
      if (sha256 !== keep) this.#removeFile(sha256, file);
    }
  }

  #removeFile(sha256: string, file: FileEntry): void {
    this.#files.delete(sha256);
    this.#fileBytes -= file.size;
    for (const k of file.keys) this.#keys.delete(k);
    // An open reader keeps its descriptor; the next lookup produces the file again.
    rm(join(this.dir, sha256), { force: true }).catch((err: unknown) =>
      this.#log?.warn({ err, sha256 }, "derived: could not remove a file"),
    );
    this.#metrics?.derivedBytes.set({ tier: "file" }, this.#fileBytes);
  }
}

function touch<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function openFd(path: string): Promise<number> {
  return new Promise((resolve, reject) =>
    open(path, OPEN_FLAGS, (err, fd) => (err ? reject(err) : resolve(fd))),
  );
}
