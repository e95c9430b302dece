/**
 * The pull loop proper: one read of one handle into one sink (`PullRun`), behind every producer
 * (get_skill handles, tool_call sideband, raw handles). Its parts: the window scheduler
 * (`pull-window.ts`: what is in flight, what is asked again, resumes), the in-order reassembly
 * (`pull-reassembly.ts`: checks, placement, running sha256, commits), chunk validation
 * (`pull-chunk.ts`) and the resume / re-read policy (`pull-resume.ts`); `pull.ts` holds the
 * public forms.
 *
 * A read goes like this (docs/protocol.md, "The blob transport"; D16, D18, D19):
 * 1. The chunk at offset 0 is asked ALONE. Its answer teaches `total_size`, `sha256`, `mime_type`,
 *    the Computer's effective chunk size, and whether it honours binary carriage; if it fails,
 *    exactly one request was sent.
 * 2. The rest is planned from the learned size and fetched `window` at a time. Each answer is
 *    placed by its own `chunk_offset`, after checking it against what was asked (it starts there,
 *    is no longer than asked, stays inside `total_size`, and `eof` agrees with its length). A short
 *    answer leaves a gap that is asked again; it never shifts the plan.
 * 3. Bytes are hashed as the contiguous prefix grows, and committed to the sink in order.
 * 4. `sha256` / `total_size` must stay the same within one logical read: a drifted answer
 *    discards everything of the current read and starts again from offset 0, never splicing
 *    (bounded by `rereads`).
 * 5. At the end the digest must equal `sha256`; a mismatch re-reads from 0, then gives up with an
 *    `IntegrityError`.
 */
import { setMaxListeners } from "node:events";
import type { GetBlobRet } from "@a2c-smcp/protocol";
import type { BlobCache } from "./cache.ts";
import { BlobChangedError, abortError } from "./errors.ts";
import { silentLogger, type AgentLogger } from "./logger.ts";
import { checkChunk, type BlobIdentity } from "./pull-chunk.ts";
import { Reassembly } from "./pull-reassembly.ts";
import { Restart, isTransient, restartRefusal, waitToResume } from "./pull-resume.ts";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_REREADS,
  DEFAULT_RETRIES,
  DEFAULT_WINDOW,
  type Carriage,
  type ChunkFetcher,
  type PullInfo,
  type PullOptions,
  type PullStats,
} from "./pull-types.ts";
import { ChunkWindow, type WindowPlan } from "./pull-window.ts";
import type { Sink } from "./sinks.ts";

const HEX64 = /^[0-9a-f]{64}$/;

/** One pull of one handle into one sink: restarts, resumes and the window of requests. */
export class PullRun<R> {
  private readonly window: number;
  private readonly chunkBytes: number;
  private readonly binary: boolean;
  private readonly retries: number;
  private readonly rereads: number;
  private readonly log: AgentLogger;
  /**
   * Every request and wait of this pull listens here, not on the caller's signal, so the caller's
   * signal holds one listener per pull whatever the window. Aborted when the pull ends, so no
   * request of it outlives the pull.
   */
  private readonly stop = new AbortController();
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
    this.binary = opts.binary ?? true;
    this.window = Math.max(1, Math.floor(opts.window ?? DEFAULT_WINDOW));
    const defChunk = this.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
    this.chunkBytes = Math.max(1, Math.floor(opts.chunkBytes ?? defChunk));
    this.retries = Math.max(0, opts.retries ?? DEFAULT_RETRIES);
    this.rereads = Math.max(0, opts.rereads ?? DEFAULT_REREADS);
    this.log = fetcher.logger ?? silentLogger;
    // The window's requests share one listener; resumes and their backoff add a few: not a leak.
    setMaxListeners(0, this.stop.signal);
  }

  /** The pull's own signal (aborted by the caller's, or when the pull ends). */
  private get signal(): AbortSignal {
    return this.stop.signal;
  }

  async run(): Promise<PullInfo> {
    const outer = this.opts.signal;
    if (outer?.aborted) throw abortError(outer);
    const onAbort = (): void => this.stop.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.runReads();
    } finally {
      outer?.removeEventListener("abort", onAbort);
      this.stop.abort(new Error("pull ended"));
    }
  }

  private async runReads(): Promise<PullInfo> {
    const { expectedSha256, cache } = this.opts;
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
        const refusal = restartRefusal(err, this.stats.restarts, this.rereads, () =>
          this.sink.canRestart(),
        );
        if (refusal) throw refusal;
        this.log.warn(
          { computer: this.computer, why: err.why },
          "blob read restarts from offset 0",
        );
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
    return { totalSize: entry.size, sha256, mimeType: "", carriage: null, stats: this.stats };
  }

  /**
   * The chunk at offset 0, resumed across transient failures, and how it travelled (its base64 is
   * decoded in the ack callback, so the answer alone no longer says).
   */
  private async fetchFirst(): Promise<{ ret: GetBlobRet; carriage: Carriage }> {
    let failures = 0;
    for (;;) {
      let decoded = false;
      try {
        this.stats.requests++;
        const ret = await this.fetcher.getBlobChunk(this.computer, this.handle, {
          offset: 0,
          maxChunkBytes: this.chunkBytes,
          binary: this.binary,
          decodeInto: {
            take: (len) => {
              decoded = true;
              return Buffer.allocUnsafe(len);
            },
            give: () => void (decoded = false),
          },
          ...(this.opts.timeoutMs !== undefined ? { timeoutMs: this.opts.timeoutMs } : {}),
          signal: this.signal,
        });
        const base64 = decoded || typeof ret.blob === "string";
        return { ret, carriage: base64 ? "base64" : "binary" };
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
  private resume(err: unknown, attempt: number): Promise<void> {
    const opts = { ...this.opts, signal: this.signal };
    return waitToResume(this.fetcher, this.computer, opts, this.stats, err, attempt);
  }

  /** The producer named other content than the Computer now serves: go back to the producer. */
  private checkProducer({ total, sha }: BlobIdentity): void {
    const { expectedSha256, expectedSize } = this.opts;
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
  }

  /**
   * What the window asks after the first chunk. The Computer clamps `max_chunk_bytes` to its
   * cap, so the plan uses the size it gave. A Computer that answered a binary request in base64
   * does not honour D19: the rest of the read asks in base64, and at the base64 chunk size
   * unless `chunkBytes` was given (big base64 strings are slow on both sides).
   */
  private planAfter(first: GetBlobRet, len: number, carriage: Carriage): WindowPlan {
    const binary = this.binary && carriage === "binary";
    let step = first.eof ? this.chunkBytes : Math.max(1, len);
    if (this.binary && !binary && this.opts.chunkBytes === undefined) {
      step = Math.min(step, DEFAULT_BASE64_CHUNK_BYTES);
    }
    return { start: len, step, binary };
  }

  /** One logical read from offset 0 to a verified end. */
  private async readOnce(): Promise<PullInfo> {
    const first = await this.fetchFirst();
    const ret = first.ret;
    const identity: BlobIdentity = { total: ret.total_size, sha: ret.sha256, mime: ret.mime_type };
    this.checkProducer(identity);
    if (this.opts.cache) {
      const hit = await this.fromCache(this.opts.cache, identity.sha, identity.total);
      if (hit) return { ...hit, mimeType: identity.mime };
    }
    await this.sink.begin(identity.total);
    const reassembly = new Reassembly(this.sink, identity, this.window, this.opts.onProgress);
    // The plan starts where the first answer ended, so its tail is not asked again.
    const firstWork = { offset: 0, len: this.chunkBytes };
    const len = checkChunk(firstWork, ret, identity);
    reassembly.accept(firstWork, ret);
    const window = new ChunkWindow(
      {
        fetcher: this.fetcher,
        computer: this.computer,
        handle: this.handle,
        sink: this.sink,
        window: this.window,
        retries: this.retries,
        timeoutMs: this.opts.timeoutMs,
        signal: this.signal,
        stats: this.stats,
        resume: (err, attempt) => this.resume(err, attempt),
      },
      reassembly,
      this.planAfter(ret, len, first.carriage),
    );
    await window.run();
    const digest = reassembly.digest();
    if (digest !== identity.sha) {
      this.log.warn(
        { computer: this.computer, expected: identity.sha, actual: digest },
        "blob sha256 mismatch",
      );
      throw new Restart("mismatch");
    }
    const carriage = first.carriage === "base64" ? "base64" : window.carriage;
    return {
      totalSize: identity.total,
      sha256: identity.sha,
      mimeType: identity.mime,
      carriage,
      stats: this.stats,
    };
  }
}
