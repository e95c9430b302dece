/**
 * The pull: one routine behind every producer's handle (get_skill handles, tool_call sideband,
 * raw handles; docs/protocol.md §6.9). This file holds its public forms (`pullBlob`, `readBlob`,
 * `readBlobWithInfo`, `downloadBlob`, `blobChunks`), its options and results, and the pull
 * itself: reads until one verifies. The files it uses sit below it and import nothing above
 * them (D103); what a lower one needs of an upper one at run time comes through an
 * interface handed down:
 * - `read.ts`: one logical read, a flow of the path: its offsets, the requests it asks again,
 *   each answer checked against the read's identity;
 * - `sinks.ts`: where the bytes go, hashed and in order (`file-sink.ts` for a file);
 * - `path.ts`: when each request goes and how big, shared by every pull to the same Computer;
 *   it sends them through the client (`ChunkFetcher`: one request, its answer checked and
 *   decoded) and hands each answer back to its read (`PathFlow`).
 *
 * A pull goes like this (D16, D18, D19, D42–D44):
 * 1. A read's first chunk is asked ALONE (read.ts). Its identity (`total_size`, `sha256`,
 *    `mime_type`) is checked here against the producer's and against `maxBytes` or what the sink
 *    can hold (`BlobTooLargeError`, before anything is allocated), then served from the cache,
 *    or resumed from a partial file (the first read only), or begun at 0.
 * 2. `sha256` / `total_size` must stay the same within one logical read: a drifted answer
 *    discards everything of the current read and starts again from offset 0, never splicing
 *    (bounded by `rereads`). At the end the digest must equal `sha256`; a mismatch re-reads from
 *    0, then gives up with an `IntegrityError`.
 * 3. A read gives up when its requests keep failing and no byte arrived for `stallTimeoutMs`,
 *    and a pull when it moves less than its minimum progress or outlasts `maxTimeMs`.
 */
import type { Hash } from "node:crypto";
import type { ContentCoding } from "@a2c-smcp/protocol";
import type { BlobCache } from "./cache.ts";
import {
  BlobChangedError,
  BlobTooLargeError,
  IntegrityError,
  TooSlowError,
  abortError,
} from "./errors.ts";
import { FileSink, type FileSinkResult, type ResumeEvent } from "./file-sink.ts";
import { silentLogger } from "./logger.ts";
import { ComputerPath, RateGate, minimumProgress, type ChunkFetcher } from "./path.ts";
import { RateLimit } from "./rate-limit.ts";
import {
  Read,
  Restart,
  type Begun,
  type BlobIdentity,
  type PullContext,
  type PullInfo,
  type ReadSettings,
} from "./read.ts";
import { BufferSink, StreamSink, type Sink } from "./sinks.ts";

export { DEFAULT_TARGET_DELAY_MS } from "./path-controller.ts";
export type { BlobChunk, Carriage, ChunkFetcher, ChunkRequest, PullStats } from "./path.ts";
export type { PullInfo } from "./read.ts";

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

/** A pull's options resolved for its reads, defaults applied. */
function readSettings(o: PullOptions, gate: RateGate): ReadSettings {
  const binary = o.binary ?? true;
  const ceiling = binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
  return {
    window: Math.max(1, Math.floor(o.window ?? DEFAULT_WINDOW)),
    chunkCeiling: Math.min(
      Math.max(1, Math.floor(o.chunkBytes ?? ceiling)),
      gate.chunkBytes ?? Infinity,
    ),
    base64Ceiling: o.chunkBytes === undefined ? DEFAULT_BASE64_CHUNK_BYTES : undefined,
    binary,
    codings: o.compression === false ? undefined : ACCEPTED_CODINGS,
    timeoutMs: o.timeoutMs,
    retries: Math.max(0, o.retries ?? DEFAULT_RETRIES),
    stallTimeoutMs: o.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
    resumeTimeoutMs: o.resumeTimeoutMs ?? DEFAULT_RESUME_TIMEOUT_MS,
    onProgress: o.onProgress,
    speed: () => minimumProgress(o, gate),
  };
}

class Pull<R> {
  private readonly ctx: PullContext<R>;
  /**
   * Every request and wait of this pull listens here, not on the caller's signal, so the caller's
   * signal holds one listener per pull. Aborted when the pull ends, so no request outlives it.
   */
  private readonly stop = new AbortController();
  private readonly started = performance.now();
  /** Whether the sink was asked yet to resume (only the first read of a pull may). */
  private resumeAsked = false;

  constructor(
    fetcher: ChunkFetcher,
    computer: string,
    handle: string,
    sink: Sink<R>,
    private readonly opts: PullOptions,
  ) {
    const gate = new RateGate(
      (fetcher as ChunkFetcher & RateCapped).rateLimit,
      opts.maxRate !== undefined ? new RateLimit(opts.maxRate, performance.now()) : undefined,
    );
    this.ctx = {
      fetcher,
      computer,
      handle,
      sink,
      path: fetcher.pathTo?.(computer) ?? new ComputerPath(fetcher, computer),
      settings: readSettings(opts, gate),
      log: fetcher.logger ?? silentLogger,
      signal: this.stop.signal,
      gate,
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
        return await new Read(this.ctx, (id, hash) => this.begin(id, hash)).run();
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
   * Begins a read at its first answer: its identity checked against the producer's promise and
   * the size bound, then served from the cache, or resumed from what the sink holds of this
   * content (the first read of the pull only), or the sink begun at 0.
   */
  private async begin(id: BlobIdentity, hash: Hash): Promise<Begun> {
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
    const cached = cache && (await this.fromCache(cache, id.sha, id.total, id.mime));
    if (cached) return { cached };
    const { sink } = this.ctx;
    if (!this.resumeAsked) {
      this.resumeAsked = true;
      this.ctx.firstOffset = 0; // later reads start at 0
      const from = await sink.resume?.({ totalSize: id.total, sha256: id.sha, mimeType: id.mime });
      if (from) return { from };
    }
    await sink.begin(id.total, { sha256: id.sha, mimeType: id.mime, hash });
    return { from: undefined };
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
