/**
 * `client:get_blob` (D14–D19; docs/protocol.md, The blob transport) and the `HandleMinter`
 * producers use.
 *
 * Order of checks (D15), after the dispatcher's schema (400) and computer-name (404) checks:
 *   handle authenticates (`invalid_handle`) → producer re-authorizes (`forbidden`) → source
 *   reachable (`gone`) → range (`range`) → slice.
 * Stateless: every request is answered from the handle and the file alone (no session, cursor or
 * TTL), so identical requests get identical answers and offsets can be fetched in any order.
 *
 * Snapshot consistency (D18: sha256 and total_size are stable within one logical read, and the
 * bytes served for a reported sha256 belong to that content), for file sources:
 *   1. open the file → descriptor (pins the inode: an atomic-rename rewrite cannot swap it), or
 *      reuse one kept from an earlier chunk when the path still names it with the same signature
 *      (descriptors.ts: exactly what a fresh open would give at that moment);
 *   2. fstat → signature S1 = dev:ino:size:mtime_ns:ctime_ns; `total_size` = size;
 *   3. sha256 for S1 from the hash cache; a computation reads through this same descriptor and
 *      checks the signature before and after, so a cached digest is the digest of content S1;
 *   4. read the chunk from the descriptor;
 *   5. fstat again → S2. S2 = S1 means no write happened between steps 2 and 5, so the bytes
 *      read are content S1's bytes and match the digest. S2 ≠ S1 (in-place write) → start again
 *      at step 1 with the new content, a bounded number of times, then `gone` (the content can no
 *      longer be served).
 * A chunk therefore carries either the old digest with old bytes or the new digest with new
 * bytes, never new bytes under the old digest; the Agent sees the digest change and restarts.
 *
 * One gap remains in step 5: write(2) stamps mtime/ctime when it starts, then copies the data, so
 * a reader whose first fstat lands inside a long in-place write sees the final signature while
 * bytes are still changing. Like git's "racily clean" rule, a signature whose ctime is younger
 * than `settleMs` is not trusted: the engine waits until it is that old and starts again. Writes
 * that take longer than the window (or writes through a shared mmap, which update times lazily)
 * are the residual, and the Agent's sha256 check after eof catches them (D18).
 *
 * Content-addressed files (a producer-given sha256: the tool spool, derived SKILL.md bodies) are
 * written once, atomically, and skip the wait. They are still served only while the hash cache's
 * digest for the snapshot's signature is their name (recorded when the Computer wrote them,
 * otherwise computed once per signature), so a foreign write into one is `gone`, never served
 * under the name; the producer is told (`discard`) and asked once more.
 */
import { closeSync, constants, fstatSync, open, read, readSync, type BigIntStats } from "node:fs";
import type { Logger } from "pino";
import {
  base64Length,
  blobNotAccessible,
  busy,
  chunkEnvelopeBound,
  IDENTITY,
  internalError,
  maxChunkBytes,
  type BlobReason,
  type ChunkEnvelope,
  type ErrorPayload,
  type GetBlobReq,
  type GetBlobRet,
  type Transport,
} from "@a2c-smcp/protocol";
import {
  type BlobSource,
  type HandleFields,
  type HandleKind,
  type HandleMinter,
  type Producer,
  type RequestContext,
} from "../contracts.ts";
import type { ComputerMetrics } from "../metrics.ts";
import { ChunkCoder, type ChunkCoderOptions } from "./content-coding.ts";
import {
  descriptorLocation,
  FdCache,
  signatureOf,
  HeldSlot,
  reusable,
  type CachedFd,
  type CheckedFd,
} from "./descriptors.ts";
import type { HandleCodec } from "./handle.ts";
import { HashBusyError, type HashCache } from "./hash-cache.ts";

/**
 * Default chunk when `max_chunk_bytes` is absent or <= 0: 90 KiB. Per chunk, base64 +
 * JSON.stringify + Buffer.from of the packet cost ~255–420 µs up to 94 KiB and ~2300 µs from
 * 96 KiB: there the base64 string (131,072 chars) leaves V8's regular pages for large-object space
 * and every chunk pays fresh page faults. 90 KiB is the largest round size that keeps the whole
 * packet (122,880 base64 chars + envelope) clear of that cliff with room for long handles and
 * req_ids, and it needs ~30 % fewer round trips than 64 KiB.
 */
export const DEFAULT_CHUNK_BYTES = 90 * 1024;
/** Pooled read buffers kept per size class (base64 chunks are read into them, then encoded). */
const POOLED_BUFFERS = 32;
/** Re-reads after the file changed mid-chunk before answering `gone`. */
const MAX_SNAPSHOT_ATTEMPTS = 5;
/** Resolves of one request: the first, and one after the producer discarded its cached file. */
const MAX_RESOLVES = 2;
/**
 * Chunks up to this size are read synchronously. A thread-pool read costs the main thread more
 * than the copy itself for small chunks (a profile of 16 KiB pulls on 2 loaded cores: the async
 * read call was ~12% of the Computer's time; a page-cache pread of 16–256 KiB takes 2–40 µs),
 * and the file's pages are normally hot (it was hashed through the page cache before its first
 * chunk). Bigger chunks, where one round trip is amortized over many bytes and a cold read would
 * hold the event loop longer, stay in the pool.
 */
const SYNC_READ_MAX_BYTES = 256 * 1024;
/** A file modified less than this long ago is not trusted yet (see the header comment). */
export const DEFAULT_SETTLE_MS = 100;

export interface BlobEngineOptions {
  codec: HandleCodec;
  hashCache: HashCache;
  /** The Server's `maxHttpBufferSize`: every ack fits it (D16). */
  maxHttpBufferSize: number;
  defaultChunkBytes?: number;
  /** Minimum age (ms) of a file's ctime before its bytes and digest are trusted. */
  settleMs?: number;
  /** The Computer's current transport (binary over polling is base64'd by engine.io). */
  transport?: () => Transport;
  metrics?: ComputerMetrics;
  log?: Logger;
  /** Open descriptors kept for reuse between chunks (descriptors.ts); 0 disables the cache. */
  fdCacheEntries?: number;
  /** Content-codings of chunk answers (content-coding.ts; D63, D64). Default: all, defaults. */
  compression?: Omit<ChunkCoderOptions, "metrics">;
}

type Outcome = GetBlobRet | ErrorPayload;

class Retry {}
const RETRY = new Retry();

export class BlobEngine implements HandleMinter {
  readonly #codec: HandleCodec;
  readonly #cache: HashCache;
  readonly #limit: number;
  readonly #defaultChunk: number;
  readonly #settleMs: number;
  readonly #buffers: BufferPool;
  readonly #transport: () => Transport;
  readonly #metrics: ComputerMetrics | undefined;
  readonly #log: Logger | undefined;
  readonly #producers = new Map<HandleKind, Producer>();
  readonly #fds: FdCache;
  readonly #coder: ChunkCoder;

  constructor(options: BlobEngineOptions) {
    this.#codec = options.codec;
    this.#cache = options.hashCache;
    this.#limit = options.maxHttpBufferSize;
    this.#defaultChunk = options.defaultChunkBytes ?? DEFAULT_CHUNK_BYTES;
    this.#settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
    this.#transport = options.transport ?? (() => "polling");
    this.#metrics = options.metrics;
    this.#log = options.log;
    this.#buffers = new BufferPool(
      [this.#defaultChunk, Math.floor(this.#limit / 4) * 3, this.#limit],
      POOLED_BUFFERS,
    );
    this.#coder = new ChunkCoder({
      ...options.compression,
      ...(this.#metrics ? { metrics: this.#metrics } : {}),
    });
    const gauge = this.#metrics?.openDescriptors;
    this.#fds = new FdCache(options.fdCacheEntries, undefined, gauge && ((n) => gauge.set(n)));
  }

  /** Registers the producer for `producer.kind` (one per kind). */
  register(producer: Producer): void {
    if (this.#producers.has(producer.kind)) {
      throw new Error(`a producer for kind '${producer.kind}' is already registered`);
    }
    this.#producers.set(producer.kind, producer);
  }

  mint(kind: HandleKind, fields: HandleFields): string {
    if (!this.#producers.has(kind)) throw new Error(`no producer registered for kind '${kind}'`);
    return this.#codec.seal(kind, fields);
  }

  /**
   * Answers one validated, correctly addressed `client:get_blob`. Never throws. A chunk of an
   * unchanged file may be answered without yielding to the event loop (cached descriptor,
   * synchronous fstat and read): an in-process caller that loops on it must yield itself.
   */
  async getBlob(req: GetBlobReq, ctx?: Partial<RequestContext>): Promise<Outcome> {
    const started = process.hrtime.bigint();
    const answer = await this.#getBlob(req, ctx).catch((err: unknown) => {
      // A full hash lane (workers/pool.ts, D59) passes: `busy`, retry later.
      if (err instanceof HashBusyError) return busy(err.message);
      (ctx?.log ?? this.#log)?.error({ err }, "client:get_blob failed");
      return internalError();
    });
    this.#metrics?.chunkSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    if ("code" in answer) {
      const reason = (answer.details as { reason?: unknown } | undefined)?.reason;
      this.#metrics?.blobErrors.inc({
        reason: typeof reason === "string" ? reason : String(answer.code),
      });
    }
    return answer;
  }

  async close(): Promise<void> {
    this.#fds.close();
  }

  async #getBlob(req: GetBlobReq, ctx?: Partial<RequestContext>): Promise<Outcome> {
    // 1. The handle authenticates (unrecognized or malformed → 4018 invalid_handle); pure, no I/O.
    const opened = this.#codec.open(req.blob_handle);
    const producer = opened && this.#producers.get(opened.kind);
    if (!opened || !producer) return fail("invalid_handle");
    for (let resolves = 1; ; resolves++) {
      const held = new HeldSlot(this.#fds);
      try {
        // 2–3. The producer re-applies its own authorization and says where the bytes are.
        const resolved = await producer.resolve(opened.fields, ctx, held);
        if (resolved === null) return fail("invalid_handle");
        if (!resolved.ok) return fail(resolved.reason);
        const source = resolved.source;
        if (source.type === "bytes") return this.#serveBytes(req, source);
        const out = await this.#serveFile(req, source, held.take(source.path));
        if (source.discard === undefined || !isGone(out)) return out;
        // A cache the producer keeps (a derived file) vanished or is corrupt: it makes it again.
        source.discard();
        if (resolves >= MAX_RESOLVES) return out;
      } finally {
        held.release();
      }
    }
  }

  async #serveBytes(
    req: GetBlobReq,
    source: Extract<BlobSource, { type: "bytes" }>,
  ): Promise<Outcome> {
    const total = source.bytes.length;
    const offset = req.chunk_offset ?? 0;
    if (offset < 0 || offset > total) return fail("range");
    const sha256 = source.sha256 ?? this.#cache.bytesSha256(source.bytes);
    const envelope = this.#envelope(req, source.mimeType, total, sha256, offset);
    const n = this.#chunkLength(req, envelope, total - offset);
    if (n === null) return tooSmallLimit();
    const end = offset + n;
    if (envelope.content_encoding !== undefined) {
      return this.#coded(req, envelope, source.bytes.subarray(offset, end), total);
    }
    const blob =
      req.blob_format === "binary"
        ? source.bytes.subarray(offset, end)
        : source.bytes.toString("base64", offset, end);
    return this.#finish(envelope, blob, n, total);
  }

  /** `checked`: a descriptor for `source.path` checked during this pull (`HeldSlot`), if any. */
  async #serveFile(
    req: GetBlobReq,
    source: Extract<BlobSource, { type: "file" }>,
    checked?: CheckedFd,
  ): Promise<Outcome> {
    for (let attempt = 1; attempt <= MAX_SNAPSHOT_ATTEMPTS; attempt++) {
      // Step 1: a cached descriptor the path still names with unchanged content (descriptors.ts),
      // else a fresh open.
      const cached = checked?.fd ?? this.#fds.acquire(source.path);
      const still = checked?.stats ?? (cached && reusable(cached, source));
      checked = undefined;
      let held: CachedFd;
      let before: BigIntStats;
      if (cached && still) [held, before] = [cached, still];
      else {
        if (cached) {
          this.#fds.invalidate(cached);
          this.#fds.release(cached);
        }
        const opened = await this.#openFresh(source);
        if (opened instanceof Retry) continue;
        if (!Array.isArray(opened)) return opened;
        [held, before] = opened;
      }
      try {
        const out = await this.#readSnapshot(req, source, held.fd, before);
        if (out !== RETRY) return out as Outcome;
        this.#metrics?.snapshotRetries.inc();
      } finally {
        this.#fds.release(held);
      }
    }
    this.#log?.warn("source kept changing while being served; answering gone");
    return fail("gone");
  }

  /** Opens, checks and adopts a descriptor for `source` (a reference is taken for the caller). */
  async #openFresh(
    source: Extract<BlobSource, { type: "file" }>,
  ): Promise<[CachedFd, BigIntStats] | ErrorPayload | Retry> {
    let fd: number;
    try {
      this.#metrics?.blobFileOpens.inc();
      // O_NOFOLLOW: a last component swapped for a symlink after the producer's check fails
      // (ELOOP) instead of being followed; O_NONBLOCK: a FIFO swapped in cannot hang the open.
      fd = await openFd(source.path, OPEN_FLAGS);
    } catch {
      return fail("gone"); // deleted, replaced by something unreadable, …
    }
    let st: BigIntStats;
    try {
      if (source.canonical) {
        const where = descriptorLocation(fd, source.path);
        // Replaced by an atomic rename after our open: the path now names new content, so
        // open again (a bounded number of times) rather than refuse a legitimate rewrite.
        if (where !== "same") {
          closeSync(fd);
          return where === "replaced" ? RETRY : fail("forbidden");
        }
      }
      // fstat of an open descriptor is a cheap syscall: done in place, not in the thread pool.
      st = fstatSync(fd, { bigint: true });
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (!st.isFile()) {
      closeSync(fd);
      return fail("gone");
    }
    return [this.#fds.adopt(fd, source.path, signatureOf(st)), st];
  }

  /** Steps 2–5 of the snapshot protocol in the header comment; `before` is step 2's fstat. */
  async #readSnapshot(
    req: GetBlobReq,
    source: Extract<BlobSource, { type: "file" }>,
    fd: number,
    before: BigIntStats,
  ): Promise<Outcome | Retry> {
    const signature = signatureOf(before);
    const named = source.sha256;
    if (named === undefined && this.#settleMs > 0) {
      const ageMs = Date.now() - Number(before.ctimeNs / 1_000_000n);
      if (ageMs < this.#settleMs) {
        await sleep(this.#settleMs - Math.max(0, ageMs));
        return RETRY;
      }
    }
    const total = Number(before.size);
    const offset = req.chunk_offset ?? 0;
    if (offset < 0 || offset > total) return fail("range");
    const sha256 = await this.#cache.fileSha256(fd, signature, total);
    if (sha256 === null) return RETRY;
    if (named !== undefined && sha256 !== named) {
      this.#log?.warn({ sha256: named }, "content-addressed file does not hold its content");
      return fail("gone");
    }
    const envelope = this.#envelope(req, source.mimeType, total, sha256, offset);
    const n = this.#chunkLength(req, envelope, total - offset);
    if (n === null) return tooSmallLimit();
    const binary = req.blob_format === "binary";
    // A binary chunk leaves in the buffer it was read into: a fresh one, not the pool's.
    const buf = binary ? Buffer.allocUnsafeSlow(n) : this.#buffers.take(n);
    try {
      let got = 0;
      while (got < n) {
        const bytesRead =
          n <= SYNC_READ_MAX_BYTES
            ? readSync(fd, buf, got, n - got, offset + got)
            : await readFd(fd, buf, got, n - got, offset + got);
        if (bytesRead === 0) return RETRY; // shrank under us
        got += bytesRead;
      }
      const after = fstatSync(fd, { bigint: true });
      if (signatureOf(after) !== signature) return RETRY;
      // The bytes served so far show the content changed under its digest with no timestamp
      // moving (a shared mmap): the digest is gone from the cache, serve the chunk again under
      // the new one (hash-cache.ts, `Coverage`).
      if (this.#cache.served(signature, offset, buf.subarray(0, n), total)) {
        this.#log?.warn(
          { sha256 },
          "served bytes differ from the cached sha256 with unchanged timestamps: hashing again",
        );
        return RETRY;
      }
      // Coded from the buffer it was read into; the pooled one goes back only after this.
      if (envelope.content_encoding !== undefined) {
        return await this.#coded(req, envelope, buf.subarray(0, n), total);
      }
      const blob = binary ? buf.subarray(0, n) : buf.toString("base64", 0, n);
      return this.#finish(envelope, blob, n, total);
    } finally {
      // A base64 chunk was copied into its string; a binary one leaves with its answer.
      if (!binary) this.#buffers.give(buf);
    }
  }

  #envelope(
    req: GetBlobReq,
    mimeType: string,
    total: number,
    sha256: string,
    offset: number,
  ): ChunkEnvelope {
    const envelope: ChunkEnvelope = {
      blob_handle: req.blob_handle,
      mime_type: mimeType,
      total_size: total,
      sha256,
      chunk_offset: offset,
      req_id: req.req_id,
    };
    if (req.blob_format !== undefined) envelope.blob_format = req.blob_format;
    if (req.content_encoding !== undefined) {
      // Sized as if the answer carried both fields at their widest (`identity`, a decoded_size as
      // long as total_size), so a coded answer, whose blob is smaller than the chunk, always
      // fits (content-coding.ts); an identity answer carries neither.
      envelope.content_encoding = IDENTITY;
      envelope.decoded_size = total;
    }
    return envelope;
  }

  /**
   * D16: `max_chunk_bytes` absent or <= 0 → default; otherwise min(requested, cap), where cap is
   * computed for this exact envelope so the serialized ack is <= maxHttpBufferSize (exact to the
   * byte, protocol/sizing.ts, so the ack is not serialized twice). `null` when not even one byte
   * fits: a misconfigured, tiny buffer limit.
   */
  #chunkLength(req: GetBlobReq, envelope: ChunkEnvelope, remaining: number): number | null {
    const requested = req.max_chunk_bytes;
    const wanted = requested === undefined || requested <= 0 ? this.#defaultChunk : requested;
    // Far below the limit even with the worst-case envelope: the exact cap (a JSON.stringify of
    // the envelope per chunk) cannot be smaller than `wanted`.
    // (Binary over polling travels base64'd by engine.io, so it is counted as base64.)
    const raw = req.blob_format === "binary" && this.#transport() === "websocket";
    const carried = raw ? wanted : base64Length(wanted);
    if (carried + chunkEnvelopeBound(envelope) <= this.#limit) return Math.min(wanted, remaining);
    const cap = maxChunkBytes({
      maxHttpBufferSize: this.#limit,
      envelope,
      carriage: req.blob_format === "binary" ? "binary" : "base64",
      transport: this.#transport(),
    });
    if (cap <= 0) return null;
    return Math.min(wanted, cap, remaining);
  }

  /**
   * The answer to a request that asked for a content-coding (D63): `bytes` coded with the one
   * negotiated when that pays (content-coding.ts), with the coding and how many resource bytes
   * `blob` decodes to; else the identity answer, which carries neither (identity is the
   * protocol's default, and the fields would cost every incompressible chunk their bytes).
   */
  async #coded(
    req: GetBlobReq,
    envelope: ChunkEnvelope,
    bytes: Buffer,
    total: number,
  ): Promise<Outcome> {
    const n = bytes.length;
    const planned = this.#coder.plan(req.content_encoding) ?? IDENTITY;
    const coded = await this.#coder.encode(planned, bytes, envelope.mime_type, envelope.sha256);
    const binary = req.blob_format === "binary";
    if (!coded) return this.#finish(envelope, binary ? bytes : bytes.toString("base64"), n, total);
    // The identity answer's fields with the coding's two: a coded chunk paid for a compression,
    // so the extra object costs nothing that shows.
    const ret = this.#finish(envelope, binary ? coded : coded.toString("base64"), n, total);
    return { ...ret, content_encoding: planned, decoded_size: n };
  }

  #finish(envelope: ChunkEnvelope, blob: string | Buffer, n: number, total: number): Outcome {
    // eof ⟺ chunk_offset + this chunk's bytes == total_size. A literal, not `{...envelope, …}`:
    // V8 takes a slow path for a spread followed by more keys, paid on every chunk. Keys in the
    // envelope's order, then eof and blob.
    const eof = envelope.chunk_offset + n === total;
    const ret: GetBlobRet =
      envelope.blob_format === undefined
        ? {
            blob_handle: envelope.blob_handle,
            mime_type: envelope.mime_type,
            total_size: envelope.total_size,
            sha256: envelope.sha256,
            chunk_offset: envelope.chunk_offset,
            req_id: envelope.req_id,
            eof,
            blob,
          }
        : {
            blob_handle: envelope.blob_handle,
            mime_type: envelope.mime_type,
            total_size: envelope.total_size,
            sha256: envelope.sha256,
            chunk_offset: envelope.chunk_offset,
            req_id: envelope.req_id,
            blob_format: envelope.blob_format,
            eof,
            blob,
          };
    this.#metrics?.blobBytes.inc({ carriage: typeof blob === "string" ? "base64" : "binary" }, n);
    return ret;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isGone(out: Outcome): boolean {
  return "code" in out && (out.details as { reason?: unknown } | undefined)?.reason === "gone";
}

function fail(reason: BlobReason): ErrorPayload {
  return blobNotAccessible(reason);
}

function tooSmallLimit(): ErrorPayload {
  return internalError("maxHttpBufferSize is too small for this answer");
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function openFd(path: string, flags: number): Promise<number> {
  return new Promise((resolve, reject) =>
    open(path, flags, (err, fd) => (err ? reject(err) : resolve(fd))),
  );
}

function readFd(
  fd: number,
  buf: Buffer,
  at: number,
  length: number,
  position: number,
): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buf, at, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

/**
 * Reused read buffers for base64 chunks: a chunk is read into a pooled Buffer, encoded to a string
 * (which copies), and the Buffer goes straight back, so no fresh allocation per chunk and no
 * first-touch page faults (14–20 µs per 4 KiB page on a loaded VM). Size classes: the default
 * chunk, the largest base64 chunk the buffer limit allows, and the limit; only the pages a chunk
 * touches are faulted in, once per pooled buffer.
 */
class BufferPool {
  readonly #classes: number[];
  readonly #free = new Map<number, Buffer[]>();
  readonly #maxFreePerClass: number;

  constructor(sizes: number[], maxFreePerClass: number) {
    this.#classes = [...new Set(sizes.filter((s) => s > 0))].sort((a, b) => a - b);
    this.#maxFreePerClass = maxFreePerClass;
    for (const c of this.#classes) this.#free.set(c, []);
  }

  /** A buffer of at least `n` bytes (contents undefined). */
  take(n: number): Buffer {
    const cls = this.#classes.find((c) => c >= n);
    if (cls === undefined) return Buffer.allocUnsafeSlow(n);
    return this.#free.get(cls)!.pop() ?? Buffer.allocUnsafeSlow(cls);
  }

  give(buf: Buffer): void {
    const list = this.#free.get(buf.length);
    if (list && list.length < this.#maxFreePerClass) list.push(buf);
  }
}
