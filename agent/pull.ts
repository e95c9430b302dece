/**
 * The pull: one routine behind every producer's handle (get_skill handles, tool_call sideband,
 * raw handles; docs/protocol.md §6.9). This file holds its public forms (`pullBlob`, `readBlob`,
 * `readBlobWithInfo`, `downloadBlob`, `blobChunks`), its options and results, and the loop. What
 * it calls: `path.ts` (when to send a request and how big, shared by every pull to the same
 * Computer), through it the client (`fetchChunk`: one request, its answer checked and decoded),
 * and a sink (`sinks.ts`: where the bytes go, in order).
 *
 * A read goes like this (D16, D18, D19, D42–D44):
 * 1. The chunk at offset 0 is asked ALONE. Its answer teaches `total_size`, `sha256`,
 *    `mime_type`, whether the Computer clamps the chunk size and whether it honours binary
 *    carriage; if it fails, exactly one request was sent. A size over the read's `maxBytes`, or
 *    one its sink cannot hold, ends the read here (`BlobTooLargeError`), before anything is
 *    allocated.
 * 2. The rest is asked in offsets, as the path lets requests out. Each answer is placed by its
 *    own `chunk_offset` (the client checked it against what was asked); a short answer leaves a
 *    gap that is asked again, never a shifted plan.
 * 3. Bytes are hashed as the contiguous prefix grows, and handed to the sink in order.
 * 4. `sha256` / `total_size` must stay the same within one logical read: a drifted answer
 *    discards everything of the current read and starts again from offset 0, never splicing
 *    (bounded by `rereads`). At the end the digest must equal `sha256`; a mismatch re-reads from
 *    0, then gives up with an `IntegrityError`.
 * 5. A failed request is asked again: after about a round trip for `busy`, at once for a lost
 *    answer, after a backoff for another 500; the path slows down for the first two. Only a
 *    Computer or socket that went away makes the read wait and resume (`waitForComputer`). A read
 *    gives up when its requests keep failing and no byte arrived for `stallTimeoutMs`.
 */
import { createHash, type Hash } from "node:crypto";
import { IDENTITY, type ContentCoding } from "@a2c-smcp/protocol";
import type { BlobCache } from "./cache.ts";
import {
  BlobChangedError,
  BlobNotAccessibleError,
  BlobTooLargeError,
  ChunkContractError,
  IntegrityError,
  RequestTimeoutError,
  TooSlowError,
  abortError,
  asError,
} from "./errors.ts";
import { silentLogger, type AgentLogger } from "./logger.ts";
import {
  ComputerPath,
  failureKind,
  type BlobChunk,
  type Carriage,
  type ChunkFetcher,
  type ChunkWork,
  type PathFlow,
} from "./path.ts";
import { AnswerJudge, RateGate, minimumProgress, type SpeedGuard } from "./pull-guard.ts";
import { RateLimit } from "./rate-limit.ts";
import {
  BufferSink,
  FileSink,
  StreamSink,
  type FileSinkResult,
  type ResumeEvent,
  type Sink,
} from "./sinks.ts";

export {
  DEFAULT_TARGET_DELAY_MS,
  type BlobChunk,
  type Carriage,
  type ChunkFetcher,
  type ChunkRequest,
} from "./path.ts";

// ---------------------------------------------------------------------------------------------
// Defaults, options and results

/**
 * The most requests one pull keeps in flight, a ceiling (the path decides how many it needs,
 * D40). Memory stays bounded whatever the blob's size: a pull holds at most 2 × window chunks
 * besides its sink's write batch.
 */
export const DEFAULT_WINDOW = 16;
/**
 * The largest chunk carried as base64: small enough that a chunk's string stays below the size
 * (about 96 KiB of bytes) from which every base64 string costs fresh pages to build and decode.
 * A read that asked for binary carriage and got base64 keeps to it, unless `chunkBytes` was given.
 */
export const DEFAULT_BASE64_CHUNK_BYTES = 64 * 1024;
/** The largest chunk with binary carriage (D19): no base64 string, so bigger is cheaper. */
export const DEFAULT_BINARY_CHUNK_BYTES = 512 * 1024;
/**
 * What a pull's requests accept unless `compression: false` (D65): brotli first (smaller and
 * cheaper than gzip at the levels a Computer uses, D64), gzip for Computers without it.
 */
export const ACCEPTED_CODINGS: readonly ContentCoding[] = ["br", "gzip"];
/** Resumes in a row (the Computer or our socket went away) without a byte, or other 500s. */
export const DEFAULT_RETRIES = 8;
/** Whole re-reads from offset 0 after drift or a final sha256 mismatch. */
export const DEFAULT_REREADS = 2;
/** How long one resume waits for the Computer to come back. */
export const DEFAULT_RESUME_TIMEOUT_MS = 120_000;
/** How long a read's requests may keep failing (busy, lost answers, 500) without a byte (D43). */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;
/**
 * The largest blob read into memory unless `maxBytes` says otherwise: `readBlob`, a text skill
 * file drained into `body`, a restored sideband item (D45). A Computer may claim any size;
 * larger resources go to a file (`downloadBlob`) or a stream (`blobChunks`).
 */
export const DEFAULT_MAX_IN_MEMORY_BYTES = 256 * 1024 * 1024;

export interface PullProgress {
  /** Bytes of the current read held so far (in any order). */
  bytes: number;
  total: number;
}

export interface PullOptions {
  /** The most requests in flight at once (a ceiling; the path sets how many). Default 16. */
  window?: number;
  /**
   * The largest `max_chunk_bytes` asked (a ceiling; the path sets the size from the rate).
   * Default 512 KiB with binary carriage, 64 KiB with base64 (also after a Computer answered a
   * binary request in base64).
   */
  chunkBytes?: number;
  /**
   * Ask for binary carriage (`blob_format: "binary"`, D19). Default true: a Computer that does
   * not honour it answers base64 and the read goes on in base64. `false` is the spec's mode: no
   * `blob_format` is sent at all. Either form of an answer is always accepted.
   */
  binary?: boolean;
  /**
   * Ask for compressed chunks (`content_encoding: ["br", "gzip"]`, D63, D65). Default true: a
   * Computer codes a chunk only where that pays and answers the rest `identity`, and one that
   * does not know the field answers as if it were not sent. `false` sends no `content_encoding`.
   */
  compression?: boolean;
  signal?: AbortSignal;
  /** Called after every accepted chunk. */
  onProgress?: (p: PullProgress) => void;
  /** The producer's `sha256`: a Computer now serving other bytes is a `BlobChangedError`. */
  expectedSha256?: string;
  /** The producer's `total_size`, checked like `expectedSha256`. */
  expectedSize?: number;
  /**
   * The largest `total_size` accepted, checked before anything is allocated (a
   * `BlobTooLargeError` otherwise). Default: `DEFAULT_MAX_IN_MEMORY_BYTES` for reads into
   * memory, none for `downloadBlob` and `blobChunks`.
   */
  maxBytes?: number;
  /** Resumes in a row without a byte before giving up; also other 500s in a row. Default 8. */
  retries?: number;
  /** Re-reads from 0 after drift / final mismatch. Default 2. */
  rereads?: number;
  /**
   * A fixed local ack wait per chunk. Default: from the path's round trips (at least 2 s; a
   * read's first chunk, which may wait for the Computer to hash the file, the client's request
   * timeout).
   */
  timeoutMs?: number;
  /** Longest wait for the Computer to come back during one resume. Default 120 s. */
  resumeTimeoutMs?: number;
  /** How long requests may keep failing without a byte before the read gives up. Default 60 s. */
  stallTimeoutMs?: number;
  /** Content-addressed cache: a hit pulls nothing; a verified pull is stored. */
  cache?: BlobCache;
  /**
   * This pull's rate cap, bytes a second (the blob's bytes as they travel), on top of the
   * client's `maxRate` that all its pulls share. Default: none.
   */
  maxRate?: number;
  /**
   * The minimum progress (curl's `--speed-limit`): a pull that moves fewer bytes a second than
   * this, averaged over `speedTimeMs`, ends with a `TooSlowError`. Default 1024; 0 turns it off.
   */
  speedLimit?: number;
  /** The window of `speedLimit` (curl's `--speed-time`), ms. Default 60 s. */
  speedTimeMs?: number;
  /** An overall bound on the pull (curl's `--max-time`), ms: a `TooSlowError` after it. Default none. */
  maxTimeMs?: number;
}

/** `downloadBlob`'s options: a pull's, and how to treat a partial file left by an earlier one. */
export interface DownloadOptions extends PullOptions {
  /**
   * Continue from the partial file (`<path>.a2c-part`) an earlier download of the same content
   * left, its bytes hashed again first (D85). Without it a partial file is replaced.
   */
  resume?: boolean;
  /** Told what became of a partial file found at the start (resumed, or why it was not). */
  onResume?: (event: ResumeEvent) => void;
}

/** A fetcher that carries a rate cap every pull through it shares (the client's `maxRate`). */
interface RateCapped {
  readonly rateLimit?: RateLimit | undefined;
}

export interface PullStats {
  /** `client:get_blob` requests sent. */
  requests: number;
  /** Decoded bytes received in answers, every read included (more than the blob on a restart). */
  bytesReceived: number;
  /**
   * Bytes of `blob` in those answers as they travelled (base64 characters, or the binary
   * attachment's bytes, coded when a coding was applied): over `bytesReceived`, the wire bytes
   * per payload byte, envelopes and framing aside.
   */
  wireBytes: number;
  /**
   * Answers by the content-coding they came in (D63): `br`, `gzip`, `deflate`, `identity`
   * (also for a Computer that ignored the request's `content_encoding`, or when none was asked).
   */
  codings: Record<string, number>;
  /** Requests answered `busy` (each slowed the pull and was asked again). */
  busy: number;
  /** Requests not answered in time, here or at the Server's relay (each asked again). */
  timeouts: number;
  /** Resumes after the Computer or our socket went away. */
  resumes: number;
  /** Reads restarted from offset 0 (drift, mismatch, range). */
  restarts: number;
  /** The blob's bytes over the pull's duration, bytes a second (0 from the cache). */
  rate: number;
  /** The path's smoothed round trip of a chunk at the end, ms (0 from the cache). */
  rttMs: number;
  /** The pull's duration, ms. */
  elapsedMs: number;
  /** The bytes came from the local cache. */
  fromCache: boolean;
  /** Bytes a resume found verified in the partial file (not pulled again; 0 otherwise). */
  resumedFrom: number;
}

export interface PullInfo {
  totalSize: number;
  sha256: string;
  mimeType: string;
  /**
   * How the verified read's chunks travelled: `binary` when every one came as a binary
   * attachment, `base64` when any came as a string; `null` when the bytes came from the cache.
   */
  carriage: Carriage | null;
  stats: PullStats;
}

// ---------------------------------------------------------------------------------------------
// The public forms

/**
 * Pulls `handle` from `computer` into `sink`. The one loop behind `readBlob`, `downloadBlob`,
 * `blobChunks`, get_skill handles and tool_call sideband items.
 */
export async function pullBlob<R>(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  sink: Sink<R>,
  opts: PullOptions = {},
): Promise<{ value: R; info: PullInfo }> {
  const pull = new Pull(fetcher, computer, handle, sink, opts);
  let info: PullInfo;
  let value: R;
  try {
    info = await pull.run();
    value = await sink.finish();
  } catch (err) {
    await sink.abort(err);
    throw err;
  }
  if (opts.cache && !info.stats.fromCache) await opts.cache.store(info.sha256, value);
  return { value, info };
}

/** Reads a whole blob into memory (one Buffer, allocated once the size is known and fits). */
export async function readBlob(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): Promise<Buffer> {
  return (await readBlobWithInfo(fetcher, computer, handle, opts)).value;
}

/** `readBlob` plus the read's metadata and statistics. */
export async function readBlobWithInfo(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): Promise<{ value: Buffer; info: PullInfo }> {
  const bounded = { ...opts, maxBytes: opts.maxBytes ?? DEFAULT_MAX_IN_MEMORY_BYTES };
  return pullBlob(fetcher, computer, handle, new BufferSink(), bounded);
}

/**
 * Downloads a blob to `path`: a partial file next to it (`<path>.a2c-part`), written in large
 * batches, fsynced once and renamed onto `path` (which never holds a partial file, and keeps what
 * it held on a failure). An interrupted download keeps the partial file for `resume`.
 */
export async function downloadBlob(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  path: string,
  opts: DownloadOptions = {},
): Promise<PullInfo & FileSinkResult> {
  const sink = new FileSink(path, {
    resume: opts.resume ?? false,
    source: { computer, handle },
    ...(opts.onResume ? { onResume: opts.onResume } : {}),
  });
  const { value, info } = await pullBlob(fetcher, computer, handle, sink, opts);
  return { ...info, ...value };
}

/**
 * The blob as an in-order async iterable of Buffers, with backpressure (at most about `window`
 * chunks wait for the consumer). Breaking out of the loop stops the pull.
 * `Readable.from(blobChunks(...))` gives a Node stream.
 */
export async function* blobChunks(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): AsyncGenerator<Buffer, PullInfo | undefined, undefined> {
  const sink = new StreamSink(Math.max(1, opts.window ?? DEFAULT_WINDOW));
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  let info: PullInfo | undefined;
  const running = pullBlob(fetcher, computer, handle, sink, { ...opts, signal }).then(
    (r) => {
      info = r.info;
    },
    () => undefined, // the failure reaches the consumer through the sink
  );
  try {
    yield* sink.chunks();
  } finally {
    stop.abort();
    await running;
  }
  return info;
}

// ---------------------------------------------------------------------------------------------
// One pull: reads from offset 0 until one verifies (restarts), or the cache

const HEX64 = /^[0-9a-f]{64}$/;

/** Thrown inside a read to start again from offset 0. */
class Restart extends Error {
  constructor(readonly why: "drift" | "mismatch" | "range") {
    super(`restart: ${why}`);
  }
}

/** What the chunk at offset 0 taught; every later answer must agree with it. */
interface BlobIdentity {
  total: number;
  sha: string;
  mime: string;
}

/** What every read of one pull shares. */
interface PullContext<R> {
  fetcher: ChunkFetcher;
  computer: string;
  handle: string;
  sink: Sink<R>;
  path: ComputerPath;
  opts: PullOptions;
  log: AgentLogger;
  stats: PullStats;
  /** The pull's own signal (aborted by the caller's, or when the pull ends). */
  signal: AbortSignal;
  /** The rate caps its requests wait for. */
  gate: RateGate;
  /** Whether the sink was asked yet to resume (only the first read of a pull may). */
  resumeAsked: boolean;
  /** Where the first request of the first read goes: where a resume would go on, else 0. */
  firstOffset: number;
}

class Pull<R> {
  private readonly ctx: PullContext<R>;
  /**
   * Every request and wait of this pull listens here, not on the caller's signal, so the caller's
   * signal holds one listener per pull. Aborted when the pull ends, so no request outlives it.
   */
  private readonly stop = new AbortController();
  private readonly started = performance.now();

  constructor(
    fetcher: ChunkFetcher,
    computer: string,
    handle: string,
    sink: Sink<R>,
    private readonly opts: PullOptions,
  ) {
    this.ctx = {
      fetcher,
      computer,
      handle,
      sink,
      path: fetcher.pathTo?.(computer) ?? new ComputerPath(fetcher, computer),
      opts,
      log: fetcher.logger ?? silentLogger,
      signal: this.stop.signal,
      gate: new RateGate(
        (fetcher as ChunkFetcher & RateCapped).rateLimit,
        opts.maxRate !== undefined ? new RateLimit(opts.maxRate, performance.now()) : undefined,
      ),
      resumeAsked: false,
      firstOffset: 0,
      stats: {
        requests: 0,
        bytesReceived: 0,
        wireBytes: 0,
        codings: {},
        busy: 0,
        timeouts: 0,
        resumes: 0,
        restarts: 0,
        rate: 0,
        rttMs: 0,
        elapsedMs: 0,
        fromCache: false,
        resumedFrom: 0,
      },
    };
  }

  async run(): Promise<PullInfo> {
    const outer = this.opts.signal;
    if (outer?.aborted) throw abortError(outer);
    const onAbort = (): void => this.stop.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    const max = this.opts.maxTimeMs;
    const bound =
      max !== undefined
        ? setTimeout(() => {
            const s = max / 1000;
            this.stop.abort(new TooSlowError(`the pull did not end within ${s} s`, "max_time"));
          }, max)
        : undefined;
    try {
      const info = await this.reads();
      const s = info.stats;
      s.elapsedMs = performance.now() - this.started;
      if (!s.fromCache) {
        s.rate = s.elapsedMs > 0 ? (info.totalSize * 1000) / s.elapsedMs : 0;
        s.rttMs = this.ctx.path.rtt;
      }
      return info;
    } finally {
      clearTimeout(bound);
      outer?.removeEventListener("abort", onAbort);
      this.stop.abort(new Error("pull ended"));
    }
  }

  private async reads(): Promise<PullInfo> {
    const { expectedSha256, expectedSize, cache, maxBytes } = this.opts;
    if (expectedSize !== undefined && maxBytes !== undefined && expectedSize > maxBytes) {
      throw new BlobTooLargeError(expectedSize, maxBytes, "limit");
    }
    if (cache && expectedSha256 && HEX64.test(expectedSha256)) {
      const hit = await this.fromCache(cache, expectedSha256, expectedSize, "");
      if (hit) return hit;
    }
    const { stats, log, sink } = this.ctx;
    // A resume asks its first chunk where it would go on: that answer teaches the identity too.
    this.ctx.firstOffset = (await sink.resumeHint?.()) ?? 0;
    const rereads = Math.max(0, this.opts.rereads ?? DEFAULT_REREADS);
    for (;;) {
      try {
        return await new Read(this.ctx, (id) => this.learned(id)).run();
      } catch (err) {
        if (!(err instanceof Restart)) throw err;
        stats.restarts++;
        if (stats.restarts > rereads) {
          throw err.why === "mismatch"
            ? new IntegrityError(
                `sha256 of the reassembled blob did not match after ${stats.restarts} reads`,
              )
            : new BlobChangedError(`blob kept changing during the read (${err.why})`);
        }
        if (!sink.canRestart()) {
          throw err.why === "mismatch"
            ? new IntegrityError("sha256 mismatch after bytes were already streamed")
            : new BlobChangedError(`blob changed after bytes were already streamed (${err.why})`);
        }
        log.warn({ computer: this.ctx.computer, why: err.why }, "blob read restarts from offset 0");
      }
    }
  }

  /**
   * The first answer's identity, before the sink is sized: the producer's promise, the size
   * bound, and the cache. A `PullInfo` ends the read from the cache.
   */
  private async learned(id: BlobIdentity): Promise<PullInfo | undefined> {
    const { expectedSha256, expectedSize, maxBytes, cache } = this.opts;
    if (expectedSha256 !== undefined && expectedSha256 !== id.sha) {
      throw new BlobChangedError(
        "the Computer now serves other content than the producer named (sha256 differs); " +
          "ask the producer again",
        expectedSha256,
        id.sha,
      );
    }
    if (expectedSize !== undefined && expectedSize !== id.total) {
      throw new BlobChangedError(
        `the Computer now serves ${id.total} bytes, the producer named ${expectedSize}`,
      );
    }
    if (maxBytes !== undefined && id.total > maxBytes) {
      throw new BlobTooLargeError(id.total, maxBytes, "limit");
    }
    if (cache) return this.fromCache(cache, id.sha, id.total, id.mime);
    return undefined;
  }

  private async fromCache(
    cache: BlobCache,
    sha256: string,
    size: number | undefined,
    mimeType: string,
  ): Promise<PullInfo | undefined> {
    const entry = await cache.lookup(sha256, size);
    if (!entry) return undefined;
    const { sink, stats } = this.ctx;
    await sink.begin(entry.size);
    await cache.feed(entry, sink, DEFAULT_BINARY_CHUNK_BYTES);
    stats.fromCache = true;
    return { totalSize: entry.size, sha256, mimeType, carriage: null, stats };
  }
}

// ---------------------------------------------------------------------------------------------
// One logical read: the offsets it asks (a flow of the path), the bytes it holds, in order

/** A request of a read, with the resume generation it was asked in. */
interface ReadWork extends ChunkWork {
  epoch: number;
}

/** A request to ask again, not before `at` (performance.now() ms). */
interface Retry {
  work: ReadWork;
  at: number;
}

class Read<R> implements PathFlow {
  readonly handle: string;
  readonly signal: AbortSignal;
  readonly window: number;
  readonly timeoutMs: number | undefined;
  readonly codings: readonly ContentCoding[] | undefined;
  binary: boolean;
  chunkCeiling: number;

  private identity: BlobIdentity | undefined;
  private firstAsked = false;
  /** When the chunk at offset 0 may be asked (again). */
  private firstAt = 0;
  /** Requests of this read in flight. */
  private inflight = 0;
  /** The first offset no request has covered yet. */
  private cursor = 0;
  /** Asked before any new offset: tails of short answers and requests that failed. */
  private readonly again: Retry[] = [];
  private againTimer: NodeJS.Timeout | undefined;
  private base64Seen = false;

  /** Bytes hashed and handed to the sink, in order: the read is done when it reaches `total`. */
  private prefix = 0;
  /** Bytes accepted so far, in any order (for progress). */
  private accepted = 0;
  /** Checked chunks waiting for the prefix to reach them. */
  private readonly held = new Map<number, Buffer>();
  /** Commits whose bytes the sink still holds in memory (it answered with a promise). */
  private committing = 0;
  private readonly maxHeld: number;
  /** The sha256 of the prefix (a resume hands over one that hashed the partial file's prefix). */
  private hash: Hash = createHash("sha256");
  /** Answer lengths against what was asked (clamps and slivers). */
  private readonly judge = new AnswerJudge();
  /** The minimum progress rule, and the timer that checks it. */
  private readonly speed: SpeedGuard;
  private speedTimer: NodeJS.Timeout | undefined;
  /** Wakes the path when the rate cap lets the next request go. */
  private gateTimer: NodeJS.Timeout | undefined;

  /** Bumped by every resume, so the failures of requests sent before it start no other. */
  private epoch = 0;
  private resuming = false;
  private resumesInARow = 0;
  private retriesInARow = 0;
  private lastByteAt = performance.now();

  private settled = false;
  private resolve: (info: PullInfo) => void = () => undefined;
  private reject: (err: Error) => void = () => undefined;
  private readonly onAbort = (): void => this.fail(abortError(this.signal));

  constructor(
    private readonly ctx: PullContext<R>,
    /** Checks the first answer's identity; a `PullInfo` when the cache served the read. */
    private readonly learned: (id: BlobIdentity) => Promise<PullInfo | undefined>,
  ) {
    const o = ctx.opts;
    this.handle = ctx.handle;
    this.signal = ctx.signal;
    this.window = Math.max(1, Math.floor(o.window ?? DEFAULT_WINDOW));
    this.timeoutMs = o.timeoutMs;
    this.binary = o.binary ?? true;
    this.codings = o.compression === false ? undefined : ACCEPTED_CODINGS;
    const ceiling = this.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
    this.chunkCeiling = Math.max(1, Math.floor(o.chunkBytes ?? ceiling));
    this.chunkCeiling = Math.min(this.chunkCeiling, ctx.gate.chunkBytes ?? Infinity);
    this.maxHeld = this.window * 2;
    this.speed = minimumProgress(o, ctx.gate);
  }

  run(): Promise<PullInfo> {
    return new Promise<PullInfo>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      if (this.signal.aborted) return this.fail(abortError(this.signal));
      this.signal.addEventListener("abort", this.onAbort, { once: true });
      this.ctx.path.add(this);
    });
  }

  // --- what the path asks of a flow

  nextWork(maxLen: number): ChunkWork | undefined {
    if (this.settled || this.resuming || this.capped()) return undefined;
    if (!this.firstAsked) {
      if (performance.now() < this.firstAt) return undefined;
      this.firstAsked = true;
      const offset = this.ctx.resumeAsked ? 0 : this.ctx.firstOffset;
      return this.asked({ offset, len: maxLen, first: true, epoch: this.epoch });
    }
    const id = this.identity;
    if (!id) return undefined; // the first chunk is asked alone
    const full = this.held.size + this.committing >= this.maxHeld;
    const retry = this.takeAgain(full ? this.prefix : undefined, maxLen);
    if (retry) return this.asked(retry);
    if (full || this.cursor >= id.total) return undefined;
    const len = Math.min(maxLen, id.total - this.cursor);
    const work = { offset: this.cursor, len, epoch: this.epoch };
    this.cursor += len;
    return this.asked(work);
  }

  answered(work: ChunkWork, chunk: BlobChunk): void {
    const stats = this.ctx.stats;
    this.ctx.gate.settle(work.len - chunk.wireBytes);
    stats.bytesReceived += chunk.bytes.length;
    stats.wireBytes += chunk.wireBytes;
    const coding = chunk.coding ?? IDENTITY;
    stats.codings[coding] = (stats.codings[coding] ?? 0) + 1;
    this.inflight--;
    if (this.settled) return;
    try {
      if (work.first) return this.firstAnswered(work as ReadWork, chunk);
      this.accept(work as ReadWork, chunk);
      this.checkStuck();
    } catch (err) {
      this.fail(err);
    }
  }

  failed(work: ChunkWork, err: unknown): void {
    this.ctx.gate.settle(work.len);
    this.inflight--;
    if (this.settled) return;
    const w = work as ReadWork;
    if (w.first) this.firstAsked = false;
    this.react(w, err);
    this.checkStuck();
  }

  private react(w: ReadWork, err: unknown): void {
    const kind = failureKind(err);
    const stats = this.ctx.stats;
    const now = performance.now();
    switch (kind) {
      case "busy":
        // Ask again after about a round trip; the path has slowed down meanwhile.
        stats.busy++;
        return this.askAgain(w, now + Math.max(this.ctx.path.rtt, 10), err);
      case "timeout":
        stats.timeouts++;
        return this.askAgain(w, now, err);
      case "retry": {
        if (++this.retriesInARow > this.retries) return this.fail(err);
        const backoff = Math.min(50 * 2 ** (this.retriesInARow - 1), 2000);
        return this.askAgain(w, now + backoff, err);
      }
      case "gone":
        this.requeue(w, now);
        if (w.epoch === this.epoch) this.resume(err);
        return;
      case "final":
        if (w.first && w.offset > 0) {
          // A resume's first request past the end of a source that shrank: ask at 0 instead.
          this.ctx.firstOffset = 0;
          return this.requeue(w, now);
        }
        if (err instanceof BlobNotAccessibleError && err.reason === "range" && w.offset > 0) {
          // The offsets came from the learned size; a range refusal means the size changed
          // under us: learn it again from offset 0 (docs/protocol.md §6.7).
          return this.fail(new Restart("range"));
        }
        return this.fail(err);
    }
  }

  // --- the first answer

  /** Learns the read's identity from the chunk at offset 0, sizes the sink, places the chunk. */
  private firstAnswered(work: ReadWork, chunk: BlobChunk): void {
    const id = { total: chunk.totalSize, sha: chunk.sha256, mime: chunk.mimeType };
    // A Computer that answered a binary request in base64 does not honour D19: the rest of the
    // read asks in base64, at the base64 chunk size unless `chunkBytes` was given.
    if (this.binary && chunk.carriage === "base64") {
      this.binary = false;
      if (this.ctx.opts.chunkBytes === undefined) {
        this.chunkCeiling = Math.min(this.chunkCeiling, DEFAULT_BASE64_CHUNK_BYTES);
      }
    }
    this.learnClamp(work, chunk);
    this.learned(id)
      .then(async (cached) => {
        if (this.settled) return;
        if (cached) return this.finish(cached);
        const from = await this.resumeFrom(id);
        if (!from) {
          await this.ctx.sink.begin(id.total, {
            sha256: id.sha,
            mimeType: id.mime,
            hash: this.hash,
          });
        }
        if (this.settled) return;
        this.identity = id;
        this.watchSpeed();
        if (from || work.offset > 0)
          this.resumed(from ?? { offset: 0, hash: this.hash }, work, chunk);
        else {
          this.cursor = chunk.bytes.length;
          this.accept(work, chunk);
        }
        this.ctx.path.wake();
      })
      .catch((err: unknown) => this.fail(err));
  }

  /** What the sink holds of this content from an earlier process (the first read only). */
  private async resumeFrom(id: BlobIdentity): Promise<{ offset: number; hash: Hash } | undefined> {
    if (this.ctx.resumeAsked) return undefined;
    this.ctx.resumeAsked = true;
    return this.ctx.sink.resume?.({ totalSize: id.total, sha256: id.sha, mimeType: id.mime });
  }

  /**
   * Goes on from the sink's verified prefix (0 when it had none): the first answer's bytes that
   * continue it are kept, the others asked again in turn.
   */
  private resumed(from: { offset: number; hash: Hash }, work: ReadWork, chunk: BlobChunk): void {
    const f = from.offset;
    this.hash = from.hash;
    this.prefix = this.cursor = this.accepted = f;
    this.ctx.stats.resumedFrom = f;
    const end = work.offset + chunk.bytes.length;
    if (work.offset <= f && f < end) {
      this.held.set(f, chunk.bytes.subarray(f - work.offset));
      this.accepted = this.cursor = end;
    } else this.ctx.fetcher.releaseChunk?.(chunk.bytes);
    this.lastByteAt = performance.now();
    this.advance();
    this.ctx.opts.onProgress?.({ bytes: this.accepted, total: this.identity!.total });
    this.checkDone();
  }

  /**
   * A Computer that clamps `max_chunk_bytes` (D16): ask no more than it gives. One that keeps
   * answering slivers breaks the contract (pull-guard.ts).
   */
  private learnClamp(work: ChunkWork, chunk: BlobChunk): void {
    const ceiling = this.judge.judge(work.offset, work.len, chunk.bytes.length, chunk.eof);
    if (ceiling !== undefined) this.chunkCeiling = Math.min(this.chunkCeiling, ceiling);
  }

  /**
   * Checks the minimum progress every tenth of its window, from the first answer on; a window
   * starts again while the sink holds the pull back.
   */
  private watchSpeed(): void {
    this.speed.start(performance.now());
    if (this.speed.limit <= 0) return;
    this.speedTimer = setInterval(() => {
      const now = performance.now();
      // Held back by its sink (a slow consumer, a slow disk): not the Computer's doing.
      if (this.committing > 0 || this.held.size >= this.maxHeld) return this.speed.start(now);
      const slow = this.speed.check(now);
      if (slow) this.fail(slow);
    }, this.speed.timeMs / 10);
    this.speedTimer.unref();
  }

  /** Whether the rate cap holds the next request back (the path is woken when it may go). */
  private capped(): boolean {
    const gate = this.ctx.gate;
    if (!gate.active || this.gateTimer) return this.gateTimer !== undefined;
    const wait = gate.wait(performance.now());
    if (wait <= 0) return false;
    this.gateTimer = setTimeout(() => {
      this.gateTimer = undefined;
      this.ctx.path.wake();
    }, wait);
    return true;
  }

  // --- answers: checks, placement, hashing in order

  /**
   * Takes the answer to `work`: checks that it belongs to this read (`Restart` on drift), holds
   * its bytes, hashes and commits whatever became contiguous, and asks again for the unanswered
   * tail of a short answer.
   */
  private accept(work: ReadWork, chunk: BlobChunk): void {
    const id = this.identity!;
    if (chunk.totalSize !== id.total || chunk.sha256 !== id.sha || chunk.mimeType !== id.mime) {
      throw new Restart("drift");
    }
    const len = chunk.bytes.length;
    if (chunk.carriage === "base64") this.base64Seen = true;
    if (!work.first) this.learnClamp(work, chunk);
    this.lastByteAt = performance.now();
    this.speed.add(len, this.lastByteAt);
    this.resumesInARow = 0;
    this.retriesInARow = 0;
    this.accepted += len;
    if (len > 0) this.held.set(work.offset, chunk.bytes);
    // The first answer's tail is not asked again: the offsets go on where it ended.
    if (!work.first && len < work.len && work.offset + len < id.total) {
      const rest = Math.min(work.len - len, id.total - work.offset - len);
      this.again.unshift({
        work: { offset: work.offset + len, len: rest, epoch: this.epoch },
        at: 0,
      });
    }
    this.advance();
    this.ctx.opts.onProgress?.({ bytes: this.accepted, total: id.total });
    this.checkDone();
  }

  /** Hashes and commits the chunks that now continue the prefix. */
  private advance(): void {
    for (let next = this.held.get(this.prefix); next; next = this.held.get(this.prefix)) {
      this.held.delete(this.prefix);
      const at = this.prefix;
      this.prefix += next.length;
      // Committed before it is hashed: at a commit the sink may take the digest of the bytes
      // before it (a file sink's resume marks).
      const p = this.ctx.sink.commit(at, next);
      this.hash.update(next);
      // The sink copied what it keeps: the client may decode another chunk into these bytes.
      this.ctx.fetcher.releaseChunk?.(next);
      if (p) {
        this.committing++;
        p.then(
          () => this.committed(),
          (err: unknown) => {
            this.committing--;
            this.fail(err);
          },
        );
      }
    }
  }

  private committed(): void {
    this.committing--;
    this.checkDone();
    this.ctx.path.wake();
  }

  private checkDone(): void {
    const id = this.identity;
    if (this.settled || !id || this.prefix < id.total || this.committing > 0) return;
    const digest = this.hash.digest("hex");
    if (digest !== id.sha) {
      this.ctx.log.warn(
        { computer: this.ctx.computer, expected: id.sha, actual: digest },
        "blob sha256 mismatch",
      );
      return this.fail(new Restart("mismatch"));
    }
    this.finish({
      totalSize: id.total,
      sha256: id.sha,
      mimeType: id.mime,
      carriage: this.base64Seen ? "base64" : "binary",
      stats: this.ctx.stats,
    });
  }

  // --- failed requests

  private get retries(): number {
    return Math.max(0, this.ctx.opts.retries ?? DEFAULT_RETRIES);
  }

  /** Asks `work` again at `at`, unless requests have failed without a byte for too long. */
  private askAgain(work: ReadWork, at: number, err: unknown): void {
    const stall = this.ctx.opts.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (performance.now() - this.lastByteAt > stall) return this.fail(err);
    this.requeue(work, at);
  }

  private requeue(work: ReadWork, at: number): void {
    if (work.first) this.firstAt = at;
    else this.again.unshift({ work, at });
    this.scheduleWake();
  }

  /**
   * The first request to ask again that is due: the one at `offset` only, when the read holds
   * all it may (that one must still go out, or the read would wait forever). A longer one than
   * `maxLen` (the path's chunk size shrank) is split.
   */
  private takeAgain(offset: number | undefined, maxLen: number): ReadWork | undefined {
    const now = performance.now();
    const i = this.again.findIndex(
      (r) => r.at <= now && (offset === undefined || r.work.offset === offset),
    );
    if (i < 0) return undefined;
    const w = this.again[i]!.work;
    if (w.len <= maxLen) {
      this.again.splice(i, 1);
      return { ...w, epoch: this.epoch };
    }
    this.again[i]!.work = { offset: w.offset + maxLen, len: w.len - maxLen, epoch: w.epoch };
    return { offset: w.offset, len: maxLen, epoch: this.epoch };
  }

  /**
   * Wakes the path when the earliest request to ask later is due (one timer). Those due already
   * go out when the path wakes after the event that queued them.
   */
  private scheduleWake(): void {
    const now = performance.now();
    let due = !this.firstAsked && this.firstAt > now ? this.firstAt : Number.POSITIVE_INFINITY;
    for (const r of this.again) if (r.at > now) due = Math.min(due, r.at);
    clearTimeout(this.againTimer);
    this.againTimer = undefined;
    if (!Number.isFinite(due)) return;
    this.againTimer = setTimeout(
      () => {
        this.againTimer = undefined;
        this.ctx.path.wake();
        this.scheduleWake();
      },
      Math.ceil(due - now),
    );
  }

  /**
   * Nothing in flight, nothing to ask again, no write or resume pending, every offset asked,
   * the prefix short: nothing will ever move this read again. A consistent read cannot get
   * here; a logic slip is an error, not a hang.
   */
  private checkStuck(): void {
    const id = this.identity;
    if (this.settled || !id || this.inflight > 0 || this.resuming || this.committing > 0) return;
    if (this.again.length > 0 || this.cursor < id.total || this.prefix >= id.total) return;
    this.fail(new ChunkContractError(this.prefix, "no chunk covers this offset"));
  }

  /** The Computer or our socket went away: wait for it, then go on where the read stood. */
  private resume(err: unknown): void {
    if (this.resuming) return;
    if (++this.resumesInARow > this.retries) return this.fail(err);
    this.resuming = true;
    this.speed.pause();
    this.epoch++;
    const { fetcher, computer, stats, log, opts, signal } = this.ctx;
    const attempt = this.resumesInARow;
    stats.resumes++;
    log.info({ computer, err: String(err), attempt }, "blob pull resuming");
    fetcher
      .waitForComputer(computer, {
        signal,
        timeoutMs: opts.resumeTimeoutMs ?? DEFAULT_RESUME_TIMEOUT_MS,
      })
      // Listed again; a short backoff keeps a flapping peer from burning retries.
      .then(() => delay(Math.min(50 * 2 ** (attempt - 1), 2000), signal))
      .then(
        () => {
          this.resuming = false;
          this.speed.start(performance.now());
          this.ctx.path.wake();
        },
        (waitErr: unknown) => {
          // A wait that timed out reports the failure that started it.
          this.fail(waitErr instanceof RequestTimeoutError ? err : waitErr);
        },
      );
  }

  // --- the end

  private finish(info: PullInfo): void {
    if (this.settled) return;
    this.end();
    this.resolve(info);
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.end();
    this.reject(asError(err));
  }

  private end(): void {
    this.settled = true;
    clearTimeout(this.againTimer);
    clearTimeout(this.gateTimer);
    clearInterval(this.speedTimer);
    this.signal.removeEventListener("abort", this.onAbort);
    this.ctx.path.remove(this);
    for (const bytes of this.held.values()) this.ctx.fetcher.releaseChunk?.(bytes);
    this.held.clear();
  }

  /** Counts a request about to be sent. */
  private asked(work: ReadWork): ReadWork {
    this.ctx.gate.take(work.len, performance.now());
    this.ctx.stats.requests++;
    this.inflight++;
    return work;
  }
}

/** Resolves after `ms`, or rejects with the abort reason. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    const t = setTimeout(done, ms);
    function done(): void {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort(): void {
      clearTimeout(t);
      reject(abortError(signal));
    }
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
