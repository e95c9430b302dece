/**
 * Whole-resource sha256 by content signature (D18): a chunk costs the same whether the
 * resource is 1 MiB or 1 GiB, because the file is hashed once per content, not once per chunk
 * (the reference SDKs re-hash the whole file on every chunk).
 *
 * - Key: the signature `dev:ino:size:mtime_ns:ctime_ns`. Any write changes mtime/ctime (Linux ≥ 6.13
 *   hands out fine-grained timestamps once a file's times were observed, so two writes in one
 *   clock tick still differ); an atomic-rename rewrite changes the inode.
 * - Bounded LRU (entries; an entry is ~150 bytes).
 * - Single flight: concurrent requests for the same uncached signature share one computation.
 * - Large files are hashed in the piscina pool, small ones inline (one 1 MiB read + update costs
 *   less than a pool round trip: ~48 µs per task against sha256's ~0.6 ms per MiB). The pool
 *   keeps files up to 16 MiB on a lane of their own (workers/pool.ts, D59); a full lane throws
 *   `HashBusyError`, which the caller answers `busy`.
 * - Checked against what is served: a digest whose content changed without a timestamp moving
 *   (a write through a shared mmap) is dropped once the chunks served show it (`Coverage`, below).
 */
import { createHash } from "node:crypto";
import type { ComputerMetrics } from "../metrics.ts";
import { HashBusyError, type HashPool } from "../workers/pool.ts";
import hashFileInline, { crc32, type HashFileResult } from "../workers/hash-file.ts";
import { shareFlight } from "./single-flight.ts";

/** A full hash lane (workers/pool.ts, D59): the caller answers `busy`. */
export { HashBusyError };

export interface HashCacheOptions {
  /** `null`: hash everything inline (`--workers 0`). */
  pool: HashPool | null;
  maxEntries?: number;
  /** Files up to this size are hashed inline even when a pool exists. */
  inlineMaxBytes?: number;
  /** Nice offset of the pool's hash threads (hash-file.ts says why). Default DEFAULT_HASH_NICE. */
  hashNice?: number;
  metrics?: ComputerMetrics;
}

export const DEFAULT_HASH_CACHE_ENTRIES = 10_000;
/** Contents whose served chunks are followed at once; beyond it the stalest is forgotten. */
const MAX_COVERAGES = 256;

interface Entry {
  sha256: string;
  /** CRC-32 of the same bytes, when the Computer read them itself (`Coverage`). */
  crc32: number | undefined;
}
export const DEFAULT_INLINE_HASH_BYTES = 1024 * 1024;
/**
 * Pool hash threads run this much nicer than the Computer's main thread, so chunk serving wins the
 * CPU from a whole-file hash (bench computerCost measures the event-loop delay with and without).
 */
export const DEFAULT_HASH_NICE = 10;

export class HashCache {
  readonly #pool: HashPool | null;
  readonly #maxEntries: number;
  readonly #inlineMaxBytes: number;
  readonly #metrics: ComputerMetrics | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #coverages = new Map<string, Coverage>();
  readonly #inflight = new Map<string, Promise<HashFileResult>>();
  readonly #bytesDigests = new WeakMap<Buffer, string>();
  /** Nice offset sent with every pool task; read per task so the bench can compare settings. */
  hashNice: number;

  constructor(options: HashCacheOptions) {
    this.#pool = options.pool;
    this.#maxEntries = options.maxEntries ?? DEFAULT_HASH_CACHE_ENTRIES;
    this.#inlineMaxBytes = options.inlineMaxBytes ?? DEFAULT_INLINE_HASH_BYTES;
    this.#metrics = options.metrics;
    this.hashNice = options.hashNice ?? DEFAULT_HASH_NICE;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * sha256 of the file open at `fd` whose content signature is `signature`, or `null` when the
   * file changed while it was being hashed (the caller re-stats and asks again). The caller keeps
   * `fd` open until the promise settles: a computation started by one caller may be shared with
   * others, but it reads only from its starter's descriptor, which the starter awaits.
   */
  async fileSha256(fd: number, signature: string, size: number): Promise<string | null> {
    const cached = this.#entries.get(signature);
    if (cached !== undefined) {
      this.#entries.delete(signature); // refresh LRU position
      this.#entries.set(signature, cached);
      this.#metrics?.hashCacheHits.inc();
      return cached.sha256;
    }
    const result = await shareFlight(this.#inflight, signature, () =>
      this.#compute(fd, signature, size),
    );
    return "sha256" in result ? result.sha256 : null;
  }

  /**
   * sha256 of a whole file's bytes that the caller already holds in memory (get_skill reads small
   * text files whole to inline them). With a `signature`, the caller read the bytes through a
   * descriptor whose content signature was `signature` before and after the read, and the digest
   * is recorded for it: a pull of that content then finds it here instead of hashing it again.
   */
  fileBytesSha256(signature: string | null, bytes: Buffer): string {
    const digest = createHash("sha256").update(bytes).digest("hex");
    this.#metrics?.hashComputations.inc({ path: "inline" });
    if (signature !== null) this.#remember(signature, digest, crc32?.(bytes));
    return digest;
  }

  /**
   * Records `sha256` for content signature `signature` without hashing: for a file whose bytes
   * the caller hashed as it wrote them, and whose signature shows no write since (derived.ts).
   */
  record(signature: string, sha256: string): void {
    this.#remember(signature, sha256, undefined);
  }

  /**
   * The `bytes` at `offset` were just served from content `signature` (`total` bytes) under its
   * cached digest, read between two equal fstats. Returns true when the chunks served so far
   * cover the content and prove the cached digest stale: it is dropped, so the next request
   * hashes the file again. Contents hashed elsewhere (`record`) are not checked.
   */
  served(signature: string, offset: number, bytes: Uint8Array, total: number): boolean {
    const entry = this.#entries.get(signature);
    if (entry?.crc32 === undefined || crc32 === undefined) return false;
    let coverage = this.#coverages.get(signature);
    if (coverage === undefined) {
      if (this.#coverages.size >= MAX_COVERAGES) {
        this.#coverages.delete(this.#coverages.keys().next().value as string);
      }
      coverage = new Coverage(total);
      this.#coverages.set(signature, coverage);
    }
    const whole = coverage.add(offset, bytes.length, crc32(bytes));
    if (whole === undefined) return false;
    this.#coverages.delete(signature);
    if (whole === null || whole === entry.crc32) return false;
    this.#entries.delete(signature);
    return true;
  }

  /** sha256 of in-memory content (remembered per Buffer object, computed inline). */
  bytesSha256(bytes: Buffer): string {
    let digest = this.#bytesDigests.get(bytes);
    if (digest === undefined) {
      digest = createHash("sha256").update(bytes).digest("hex");
      this.#bytesDigests.set(bytes, digest);
      this.#metrics?.hashComputations.inc({ path: "bytes" });
    }
    return digest;
  }

  async #compute(fd: number, signature: string, size: number): Promise<HashFileResult> {
    const pool = size > this.#inlineMaxBytes ? this.#pool : null;
    const result = pool
      ? await pool.hash({ fd, signature, nice: this.hashNice }, size)
      : await hashFileInline({ fd, signature });
    if ("sha256" in result) {
      this.#metrics?.hashComputations.inc({ path: pool ? "pool" : "inline" });
      this.#remember(signature, result.sha256, result.crc32);
    }
    return result;
  }

  #remember(signature: string, sha256: string, crc: number | undefined): void {
    this.#entries.delete(signature);
    this.#coverages.delete(signature);
    this.#entries.set(signature, { sha256, crc32: crc });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// What was served of one content, checked against what was hashed (D71)

/*
 * The hash cache trusts a file's timestamps: a write through a shared mmap to pages that are
 * already dirty moves neither mtime nor ctime, so the cached sha256 would name bytes the file no
 * longer holds, pull after pull. The Computer reads every byte it serves, so it can see this: the
 * hash records a CRC-32 of the whole content beside the sha256, and each chunk served adds the
 * CRC-32 of its bytes to a coverage of that content. Pieces that meet are joined with the CRC's
 * combine rule (the order chunks are served in does not matter); once the pieces cover the whole
 * content, their CRC must be the recorded one. A difference means the bytes changed under the
 * digest: the cache drops it, and the next request hashes the file again.
 *
 * CRC-32 and not sha256: it costs about a fourth of sha256 per byte (zlib.crc32, Node >= 20.15;
 * without it the check is off), and it only has to notice a change, not resist a forger: whoever
 * can write the file can serve anything anyway.
 */
const POLY = 0xedb88320;

/** a(x)·b(x) modulo the CRC-32 polynomial, bits reflected (zlib's multmodp); `a` is not 0. */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N: number[] = [];
for (let n = 0, p = 1 << 30; n < 32; n++) {
  X2N.push(p >>> 0);
  p = multmodp(p, p);
}

/** x^(n·2^k) modulo the polynomial (zlib's x2nmodp; n may exceed 2^32). */
function x2nmodp(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multmodp(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** CRC-32 of A followed by B, from CRC-32(A), CRC-32(B) and B's length (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multmodp(x2nmodp(lengthB, 3), crcA) ^ crcB) >>> 0;
}

interface Piece {
  start: number;
  end: number;
  crc: number;
}

/** Most disjoint pieces one coverage keeps; beyond it the coverage gives up (no check). */
const MAX_PIECES = 64;

/** The served pieces of one content of `total` bytes. */
export class Coverage {
  readonly #byStart = new Map<number, Piece>();
  readonly #byEnd = new Map<number, Piece>();

  constructor(readonly total: number) {}

  /**
   * Adds the `length` bytes served at `offset` (their CRC-32 `crc`). Returns the CRC-32 of the
   * whole content once the pieces cover it, `undefined` until then, `null` when this coverage
   * cannot go on (too many pieces). A piece that overlaps one already held is ignored, unless it
   * starts at 0 where one already did: another read of the content has begun, and the coverage
   * starts again with it.
   */
  add(offset: number, length: number, crc: number): number | null | undefined {
    const end = offset + length;
    if (length === 0 || end > this.total) return undefined;
    if (offset === 0 && this.#byStart.has(0)) this.#clear();
    for (const p of this.#byStart.values()) if (p.start < end && offset < p.end) return undefined;
    let piece: Piece = { start: offset, end, crc };
    const left = this.#byEnd.get(offset);
    if (left) {
      this.#remove(left);
      piece = { start: left.start, end, crc: crc32Combine(left.crc, crc, length) };
    }
    const right = this.#byStart.get(end);
    if (right) {
      this.#remove(right);
      piece = {
        start: piece.start,
        end: right.end,
        crc: crc32Combine(piece.crc, right.crc, right.end - right.start),
      };
    }
    if (piece.start === 0 && piece.end === this.total) return piece.crc;
    if (this.#byStart.size >= MAX_PIECES) return null;
    this.#byStart.set(piece.start, piece);
    this.#byEnd.set(piece.end, piece);
    return undefined;
  }

  #remove(p: Piece): void {
    this.#byStart.delete(p.start);
    this.#byEnd.delete(p.end);
  }

  #clear(): void {
    this.#byStart.clear();
    this.#byEnd.clear();
  }
}
