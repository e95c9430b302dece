/**
 * The pull loop: one routine behind every producer (get_skill handles, tool_call sideband, raw
 * handles), after blob-transfer §3 and migration §5.1, built to beat the reference SDKs' drains
 * (reference-sdks §5.1, §9): it never trusts an echoed offset, never loops on an empty chunk,
 * runs a window of requests at different offsets, resumes after a Computer or a socket comes
 * back, and keeps memory bounded by decoding straight into its sink.
 *
 * A read goes like this:
 * 1. The chunk at offset 0 is asked ALONE. Its answer teaches `total_size`, `sha256`, `mime_type`
 *    and the Computer's effective chunk size; if it fails, exactly one request was sent.
 * 2. The rest is planned from the learned size and fetched `window` at a time. Each answer is
 *    placed by its own `chunk_offset`, after checking it against what was asked (it starts there,
 *    is no longer than asked, stays inside `total_size`, and `eof` agrees with its length). A short
 *    answer leaves a gap that is asked again; it never shifts the plan.
 * 3. Bytes are hashed as the contiguous prefix grows, and committed to the sink in order.
 * 4. "sha256 / total_size MUST be stable within one logical read; an Agent that sees them change
 *    MUST restart from offset 0 and never splice mismatched bytes" (blob-transfer §3): a drifted
 *    answer discards everything of the current read and starts again (bounded by `rereads`).
 * 5. At the end the digest must equal `sha256` ("SHOULD verify and re-read on mismatch"); a
 *    mismatch re-reads from 0, then gives up with an `IntegrityError`.
 */
import { createHash, type Hash } from "node:crypto";
import type { GetBlobRet } from "../protocol/index.ts";
import type { BlobCache } from "./cache.ts";
import {
  BlobChangedError,
  BlobNotAccessibleError,
  ChunkContractError,
  ComputerNotFoundError,
  DisconnectedError,
  IntegrityError,
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  abortError,
  asError,
} from "./errors.ts";
import { log } from "./log.ts";
import { BufferSink, FileSink, StreamSink, type FileSinkResult, type Sink } from "./sinks.ts";

/** Chunks in flight at different offsets (performance-anchors: 8–16 is the sweet spot). */
export const DEFAULT_WINDOW = 8;
/** Raw bytes per base64 chunk: below the ≥ 96 KiB page-fault cliff of base64 strings. */
export const DEFAULT_BASE64_CHUNK_BYTES = 64 * 1024;
/** Raw bytes per chunk with binary carriage (D19): no base64 string, so bigger is cheaper. */
export const DEFAULT_BINARY_CHUNK_BYTES = 512 * 1024;
/** Consecutive resume attempts (Computer gone, socket dropped, relay timeout) without progress. */
export const DEFAULT_RETRIES = 8;
/** Whole re-reads from offset 0 after drift or a final sha256 mismatch. */
export const DEFAULT_REREADS = 2;
/** How long one resume waits for the Computer to come back. */
export const DEFAULT_RESUME_TIMEOUT_MS = 120_000;

export interface ChunkRequest {
  offset: number;
  maxChunkBytes: number;
  binary: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What the pull loop needs from a connection (`AgentClient` implements it). */
export interface ChunkFetcher {
  /** One raw `client:get_blob`, validated; a flat error is thrown as a typed error. */
  getBlobChunk(computer: string, handle: string, req: ChunkRequest): Promise<GetBlobRet>;
  /**
   * Resolves once our socket is connected and joined and `computer` is in the office again
   * (asking the Server for the office list first, so a stale view cannot mislead the wait).
   */
  waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;
}

export interface PullProgress {
  /** Bytes of the current read held so far (in any order). */
  bytes: number;
  total: number;
}

export interface PullOptions {
  /** Chunks in flight at once after the first. Default 8. */
  window?: number;
  /** Sent as `max_chunk_bytes`. Default 64 KiB (base64) / 512 KiB (binary). */
  chunkBytes?: number;
  /** Ask for binary carriage (`blob_format: "binary"`, D19). Either form is always accepted. */
  binary?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: PullProgress) => void;
  /** The producer's `sha256`: a Computer now serving other bytes is a `BlobChangedError`. */
  expectedSha256?: string;
  /** The producer's `total_size`, checked like `expectedSha256`. */
  expectedSize?: number;
  /** Consecutive resumes without progress before giving up. Default 8. */
  retries?: number;
  /** Re-reads from 0 after drift / final mismatch. Default 2. */
  rereads?: number;
  /** Local ack wait per chunk (the client's default when absent, ≥ 30 s). */
  timeoutMs?: number;
  /** Longest wait for the Computer to come back during one resume. Default 120 s. */
  resumeTimeoutMs?: number;
  /** Content-addressed cache: a hit pulls nothing; a verified pull is stored. */
  cache?: BlobCache;
}

export interface PullStats {
  /** `client:get_blob` requests sent. */
  requests: number;
  /** Decoded bytes accepted from answers, every read included. */
  bytesReceived: number;
  /** Reads restarted from offset 0 (drift, mismatch, range). */
  restarts: number;
  /** Resumes after a Computer / socket came back. */
  resumes: number;
  /** The bytes came from the local cache. */
  fromCache: boolean;
}

export interface PullInfo {
  totalSize: number;
  sha256: string;
  mimeType: string;
  stats: PullStats;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Failures a resume can cure: the Computer or our socket went away, or was slow. */
function isTransient(err: unknown): boolean {
  if (err instanceof DisconnectedError || err instanceof RequestTimeoutError) return true;
  if (err instanceof ComputerNotFoundError || err instanceof RelayTimeoutError) return true;
  return err instanceof ServerError; // 500 / busy: "optional exponential backoff" (digest §4.2)
}

/** Thrown inside a read to start again from offset 0. */
class Restart extends Error {
  constructor(readonly why: string) {
    super(`restart: ${why}`);
  }
}

/** Decoded length of a padded standard base64 string, or -1 if its length is impossible. */
function base64Length(s: string): number {
  if (s.length % 4 !== 0) return -1;
  let pad = 0;
  if (s.endsWith("==")) pad = 2;
  else if (s.endsWith("=")) pad = 1;
  return (s.length / 4) * 3 - pad;
}

interface Work {
  offset: number;
  len: number;
}

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
  const run = new PullRun(fetcher, computer, handle, sink, opts);
  let info: PullInfo;
  let value: R;
  try {
    info = await run.run();
    value = await sink.finish();
  } catch (err) {
    await sink.abort(err);
    throw err;
  }
  if (opts.cache && !info.stats.fromCache) await opts.cache.store(info.sha256, value);
  return { value, info };
}

class PullRun<R> {
  private readonly window: number;
  private readonly chunkBytes: number;
  private readonly binary: boolean;
  private readonly retries: number;
  private readonly rereads: number;
  readonly stats: PullStats = {
    requests: 0,
    bytesReceived: 0,
    restarts: 0,
    resumes: 0,
    fromCache: false,
  };

  constructor(
    private readonly fetcher: ChunkFetcher,
    private readonly computer: string,
    private readonly handle: string,
    private readonly sink: Sink<R>,
    private readonly opts: PullOptions,
  ) {
    this.binary = opts.binary ?? false;
    this.window = Math.max(1, Math.floor(opts.window ?? DEFAULT_WINDOW));
    const defChunk = this.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
    this.chunkBytes = Math.max(1, Math.floor(opts.chunkBytes ?? defChunk));
    this.retries = Math.max(0, opts.retries ?? DEFAULT_RETRIES);
    this.rereads = Math.max(0, opts.rereads ?? DEFAULT_REREADS);
  }

  async run(): Promise<PullInfo> {
    const { signal, expectedSha256, cache } = this.opts;
    if (signal?.aborted) throw abortError(signal);
    if (cache && expectedSha256 && HEX64.test(expectedSha256)) {
      const hit = await this.fromCache(cache, expectedSha256, this.opts.expectedSize);
      if (hit) return hit;
    }
    for (;;) {
      try {
        return await this.readOnce();
      } catch (err) {
        if (!(err instanceof Restart)) throw err;
        this.stats.restarts++;
        if (this.stats.restarts > this.rereads) {
          throw err.why === "mismatch"
            ? new IntegrityError(
                `sha256 of the reassembled blob did not match after ${this.stats.restarts} reads`,
              )
            : new BlobChangedError(`blob kept changing during the read (${err.why})`);
        }
        if (!this.sink.canRestart()) {
          throw err.why === "mismatch"
            ? new IntegrityError("sha256 mismatch after bytes were already streamed")
            : new BlobChangedError(`blob changed after bytes were already streamed (${err.why})`);
        }
        log.warn({ computer: this.computer, why: err.why }, "blob read restarts from offset 0");
      }
    }
  }

  private async fromCache(
    cache: BlobCache,
    sha256: string,
    size: number | undefined,
  ): Promise<PullInfo | null> {
    const entry = await cache.lookup(sha256, size);
    if (!entry) return null;
    await this.sink.begin(entry.size);
    await cache.feed(entry, this.sink, this.chunkBytes);
    this.stats.fromCache = true;
    return { totalSize: entry.size, sha256, mimeType: "", stats: this.stats };
  }

  /** One request, resumed across transient failures; returns the validated answer. */
  private async fetchOne(offset: number, maxLen: number): Promise<GetBlobRet> {
    let failures = 0;
    for (;;) {
      try {
        this.stats.requests++;
        return await this.fetcher.getBlobChunk(this.computer, this.handle, {
          offset,
          maxChunkBytes: maxLen,
          binary: this.binary,
          ...(this.opts.timeoutMs !== undefined ? { timeoutMs: this.opts.timeoutMs } : {}),
          ...(this.opts.signal ? { signal: this.opts.signal } : {}),
        });
      } catch (err) {
        if (!isTransient(err)) throw err;
        failures++;
        if (failures > this.retries) throw err;
        try {
          await this.resume(err, failures);
        } catch (waitErr) {
          // A wait that timed out reports the failure that started it.
          throw isTransient(waitErr) ? err : waitErr;
        }
      }
    }
  }

  /** Waits for the Computer (and our socket) to be back, with a small backoff. */
  private async resume(err: unknown, attempt: number): Promise<void> {
    const { signal } = this.opts;
    this.stats.resumes++;
    log.info({ computer: this.computer, err: String(err), attempt }, "blob pull resuming");
    await this.fetcher.waitForComputer(this.computer, {
      ...(signal ? { signal } : {}),
      timeoutMs: this.opts.resumeTimeoutMs ?? DEFAULT_RESUME_TIMEOUT_MS,
    });
    // The Computer is listed again; a short backoff keeps a flapping peer from burning retries.
    const delay = Math.min(50 * 2 ** (attempt - 1), 2000);
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(done, delay);
      function done(): void {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }
      function onAbort(): void {
        clearTimeout(t);
        reject(abortError(signal!));
      }
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Decoded byte length of an answer's `blob`. */
  private static blobLength(ret: GetBlobRet): number {
    const b = ret.blob;
    if (typeof b === "string") return base64Length(b);
    return b.byteLength;
  }

  /** Puts the answer's bytes into a region (or adopts a binary buffer); returns [bytes, owned]. */
  private place(ret: GetBlobRet, len: number): [Buffer, boolean] {
    const b = ret.blob;
    if (typeof b === "string") {
      const region = this.sink.region(ret.chunk_offset, len);
      const written = len === 0 ? 0 : region.write(b, 0, len, "base64");
      if (written !== len) {
        this.sink.discard(region);
        throw new ChunkContractError(ret.chunk_offset, "blob is not valid base64");
      }
      return [region, true];
    }
    const bytes = Buffer.isBuffer(b)
      ? b
      : b instanceof Uint8Array
        ? Buffer.from(b.buffer, b.byteOffset, b.byteLength)
        : Buffer.from(b);
    if (this.sink.inPlace) {
      const region = this.sink.region(ret.chunk_offset, len);
      bytes.copy(region);
      return [region, true];
    }
    return [bytes, false];
  }

  /** One logical read from offset 0 to a verified end. */
  private async readOnce(): Promise<PullInfo> {
    const { signal, onProgress, expectedSha256, expectedSize } = this.opts;
    const first = await this.fetchOne(0, this.chunkBytes);
    const total = first.total_size;
    const sha = first.sha256;
    const mime = first.mime_type;
    if (expectedSha256 !== undefined && expectedSha256 !== sha) {
      throw new BlobChangedError(
        "the Computer now serves other content than the producer named (sha256 differs); " +
          "ask the producer again",
        expectedSha256,
        sha,
      );
    }
    if (expectedSize !== undefined && expectedSize !== total) {
      throw new BlobChangedError(
        `the Computer now serves ${total} bytes, the producer named ${expectedSize}`,
      );
    }
    if (this.opts.cache) {
      const hit = await this.fromCache(this.opts.cache, sha, total);
      if (hit) return { ...hit, mimeType: mime };
    }
    await this.sink.begin(total);

    const hash: Hash = createHash("sha256");
    let prefix = 0; // bytes hashed and committed, in order
    let bytesHeld = 0;
    const done = new Map<number, { bytes: Buffer; owned: boolean }>();
    let committing = 0; // commits whose bytes are still held in memory
    let commitError: unknown;
    const maxHeld = this.sink.inPlace ? Number.POSITIVE_INFINITY : this.window * 2;

    /** Validates an answer against what was asked; returns its decoded length. */
    const check = (w: Work, ret: GetBlobRet): number => {
      if (ret.total_size !== total || ret.sha256 !== sha || ret.mime_type !== mime) {
        throw new Restart("drift");
      }
      const at = w.offset;
      if (ret.chunk_offset !== at) {
        throw new ChunkContractError(at, `answer starts at ${ret.chunk_offset}, not where asked`);
      }
      const len = PullRun.blobLength(ret);
      if (len < 0) throw new ChunkContractError(at, "blob is not valid base64");
      if (len > w.len)
        throw new ChunkContractError(at, `${len} bytes, more than the ${w.len} asked`);
      if (at + len > total) throw new ChunkContractError(at, `overruns total_size ${total}`);
      if (ret.eof !== (at + len === total)) {
        throw new ChunkContractError(at, `eof=${ret.eof} disagrees with ${len} bytes of ${total}`);
      }
      if (len === 0 && at < total) throw new ChunkContractError(at, "empty chunk without eof");
      return len;
    };

    /** Accepts a checked answer: places it, queues the gap of a short answer, hashes. */
    const accept = (w: Work, ret: GetBlobRet, len: number, gaps: Work[]): void => {
      const [bytes, owned] = this.place(ret, len);
      this.stats.bytesReceived += len;
      bytesHeld += len;
      if (len < w.len) gaps.push({ offset: w.offset + len, len: w.len - len });
      if (len > 0) done.set(w.offset, { bytes, owned });
      else if (owned) this.sink.discard(bytes);
      for (let next = done.get(prefix); next; next = done.get(prefix)) {
        done.delete(prefix);
        hash.update(next.bytes);
        const at = prefix;
        prefix += next.bytes.length;
        const p = this.sink.commit(at, next.bytes, next.owned);
        if (p) {
          committing++;
          void p.then(
            () => {
              committing--;
              wake();
            },
            (err: unknown) => {
              commitError ??= err;
              committing--;
              wake();
            },
          );
        }
      }
      onProgress?.({ bytes: bytesHeld, total });
    };

    let wake: () => void = () => undefined;
    const gaps: Work[] = [];
    const firstLen = check({ offset: 0, len: this.chunkBytes }, first);
    accept({ offset: 0, len: firstLen }, first, firstLen, gaps);
    // The Computer's effective chunk size: it clamps to its cap, so plan with what it gave.
    const step = first.eof ? this.chunkBytes : Math.max(1, firstLen);
    let cursor = firstLen;

    const queue: Work[] = [];
    let inflight = 0;
    let failure: unknown;
    let recovering = false;
    let epoch = 0;
    let noProgress = 0;

    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (err?: unknown): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) reject(asError(err));
        else resolve();
      };
      const onAbort = (): void => finish(abortError(signal!));
      signal?.addEventListener("abort", onAbort, { once: true });

      const nextWork = (): Work | undefined => {
        const q = queue.shift();
        if (q) return q;
        if (cursor >= total) return undefined;
        const w = { offset: cursor, len: Math.min(step, total - cursor) };
        cursor += w.len;
        return w;
      };

      const startRecovery = (err: unknown): void => {
        if (recovering) return;
        noProgress++;
        if (noProgress > this.retries) {
          failure = err;
          return;
        }
        recovering = true;
        epoch++;
        this.resume(err, noProgress).then(
          () => {
            recovering = false;
            wake();
          },
          (e: unknown) => {
            recovering = false;
            failure ??= isTransient(e) ? err : e;
            wake();
          },
        );
      };

      const issue = (w: Work): void => {
        inflight++;
        const myEpoch = epoch;
        this.stats.requests++;
        this.fetcher
          .getBlobChunk(this.computer, this.handle, {
            offset: w.offset,
            maxChunkBytes: w.len,
            binary: this.binary,
            ...(this.opts.timeoutMs !== undefined ? { timeoutMs: this.opts.timeoutMs } : {}),
            ...(signal ? { signal } : {}),
          })
          .then(
            (ret) => {
              inflight--;
              if (settled) return;
              try {
                const more: Work[] = [];
                accept(w, ret, check(w, ret), more);
                queue.unshift(...more);
                noProgress = 0;
              } catch (err) {
                failure ??= err;
              }
              wake();
            },
            (err: unknown) => {
              inflight--;
              if (settled) return;
              if (isTransient(err)) {
                queue.unshift(w); // held bytes stay; only this chunk is asked again
                if (myEpoch === epoch) startRecovery(err);
              } else if (
                err instanceof BlobNotAccessibleError &&
                err.reason === "range" &&
                w.offset > 0
              ) {
                // Our plan came from the learned size; a range error means the size changed
                // under us: re-learn it from offset 0 (digest §3.5 "range → fix the offset").
                failure ??= new Restart("range");
              } else {
                failure ??= err;
              }
              wake();
            },
          );
      };

      wake = (): void => {
        if (settled) return;
        if (commitError !== undefined) failure ??= commitError;
        if (failure !== undefined) return finish(failure);
        if (prefix === total && inflight === 0 && committing === 0) return finish();
        while (!recovering && inflight < this.window) {
          let w: Work | undefined;
          if (done.size + committing < maxHeld) w = nextWork();
          else {
            // Memory is full of chunks waiting for the one at the prefix: that one (requeued
            // after a failure) must still go out, or the read would wait forever.
            const i = queue.findIndex((q) => q.offset === prefix);
            if (i >= 0) w = queue.splice(i, 1)[0];
          }
          if (!w) break;
          issue(w);
        }
        // Nothing in flight, no write or recovery pending, prefix short: nothing will ever wake
        // this read again. A consistent plan cannot get here; a logic slip is an error, not a hang.
        if (!recovering && inflight === 0 && committing === 0 && prefix < total) {
          finish(new ChunkContractError(prefix, "no chunk covers this offset"));
        }
      };
      queue.push(...gaps);
      wake();
    }).finally(() => {
      for (const d of done.values()) if (d.owned) this.sink.discard(d.bytes);
      done.clear();
    });

    const digest = hash.digest("hex");
    if (digest !== sha) {
      log.warn({ computer: this.computer, expected: sha, actual: digest }, "blob sha256 mismatch");
      throw new Restart("mismatch");
    }
    return { totalSize: total, sha256: sha, mimeType: mime, stats: this.stats };
  }
}

// ---------------------------------------------------------------------------------------------
// The public forms

/** Reads a whole blob into memory (one Buffer allocated once the size is known). */
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
  return pullBlob(fetcher, computer, handle, new BufferSink(), opts);
}

/** Downloads a blob to `path` (temp file + positional writes + fsync + rename). */
export async function downloadBlob(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  path: string,
  opts: PullOptions = {},
): Promise<PullInfo & FileSinkResult> {
  const chunk =
    opts.chunkBytes ?? (opts.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES);
  const { value, info } = await pullBlob(
    fetcher,
    computer,
    handle,
    new FileSink(path, chunk),
    opts,
  );
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
  const chunk =
    opts.chunkBytes ?? (opts.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES);
  const sink = new StreamSink(chunk, Math.max(1, opts.window ?? DEFAULT_WINDOW));
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
