/**
 * The pull loop proper: planning and window scheduling of one read (`PullRun`), behind every
 * producer (get_skill handles, tool_call sideband, raw handles), after blob-transfer §3 and
 * migration §5.1. Chunk validation / placement live in `pull-chunk.ts`, the resume and re-read
 * policy in `pull-resume.ts`; `pull.ts` holds the public forms.
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
import { setMaxListeners } from "node:events";
import type { GetBlobRet } from "@a2c-smcp/protocol";
import type { BlobCache } from "./cache.ts";
import {
  BlobChangedError,
  BlobNotAccessibleError,
  ChunkContractError,
  abortError,
  asError,
} from "./errors.ts";
import { silentLogger, type AgentLogger } from "./logger.ts";
import { checkChunk, placeChunk, type BlobIdentity, type Work } from "./pull-chunk.ts";
import { Restart, isTransient, restartRefusal, waitToResume } from "./pull-resume.ts";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_REREADS,
  DEFAULT_RETRIES,
  DEFAULT_WINDOW,
  type ChunkFetcher,
  type DecodeTarget,
  type PullInfo,
  type PullOptions,
  type PullStats,
} from "./pull-types.ts";
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
   * Every request and wait of this pull listens here, not on the caller's signal: the caller's
   * signal gets one listener per pull, whatever the window (a window of 16 requests used to put
   * 17 listeners on it, and Node warns of a leak past 10). Aborted when the pull ends, so no
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
    this.binary = opts.binary ?? false;
    this.window = Math.max(1, Math.floor(opts.window ?? DEFAULT_WINDOW));
    const defChunk = this.binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
    this.chunkBytes = Math.max(1, Math.floor(opts.chunkBytes ?? defChunk));
    this.retries = Math.max(0, opts.retries ?? DEFAULT_RETRIES);
    this.rereads = Math.max(0, opts.rereads ?? DEFAULT_REREADS);
    this.log = fetcher.logger ?? silentLogger;
    // One listener per request in flight and per wait: the window bounds them, not a leak.
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
          decodeEarly: true,
          ...(this.opts.timeoutMs !== undefined ? { timeoutMs: this.opts.timeoutMs } : {}),
          signal: this.signal,
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
  private resume(err: unknown, attempt: number): Promise<void> {
    const opts = { ...this.opts, signal: this.signal };
    return waitToResume(this.fetcher, this.computer, opts, this.stats, err, attempt);
  }

  /** One logical read from offset 0 to a verified end. */
  private async readOnce(): Promise<PullInfo> {
    const { onProgress, expectedSha256, expectedSize } = this.opts;
    const signal = this.signal;
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

    const identity: BlobIdentity = { total, sha, mime };
    /** Validates an answer against what was asked; returns its decoded length. */
    const check = (w: Work, ret: GetBlobRet): number => checkChunk(w, ret, identity);

    /** Accepts a checked answer: places it, queues the gap of a short answer, hashes. */
    const accept = (w: Work, ret: GetBlobRet, len: number, gaps: Work[], region?: Buffer): void => {
      const [bytes, owned] = placeChunk(this.sink, ret, len, region);
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
        signal.removeEventListener("abort", onAbort);
        if (err !== undefined) reject(asError(err));
        else resolve();
      };
      const onAbort = (): void => finish(abortError(signal));
      signal.addEventListener("abort", onAbort, { once: true });

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
        // The answer's base64 is decoded in the ack callback straight into this chunk's region
        // (never more than asked: a longer answer stays a string and is rejected below).
        let region: Buffer | undefined;
        const into: DecodeTarget = {
          // Never after this read settled: a late answer must not write into a destination a
          // restarted read (same Buffer) already filled and hashed.
          take: (len) =>
            !settled && len <= w.len ? (region = this.sink.region(w.offset, len)) : undefined,
          give: (bytes) => {
            this.sink.discard(bytes);
            region = undefined;
          },
        };
        const dropRegion = (): void => {
          if (region !== undefined) this.sink.discard(region);
          region = undefined;
        };
        this.fetcher
          .getBlobChunk(this.computer, this.handle, {
            offset: w.offset,
            maxChunkBytes: w.len,
            binary: this.binary,
            decodeInto: into,
            ...(this.opts.timeoutMs !== undefined ? { timeoutMs: this.opts.timeoutMs } : {}),
            signal,
          })
          .then(
            (ret) => {
              inflight--;
              if (settled) return dropRegion();
              try {
                const more: Work[] = [];
                const placed = region !== undefined && ret.blob === region ? region : undefined;
                if (placed === undefined) dropRegion();
                accept(w, ret, check(w, ret), more, placed);
                region = undefined;
                queue.unshift(...more);
                noProgress = 0;
              } catch (err) {
                dropRegion();
                failure ??= err;
              }
              wake();
            },
            (err: unknown) => {
              inflight--;
              dropRegion();
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
      this.log.warn(
        { computer: this.computer, expected: sha, actual: digest },
        "blob sha256 mismatch",
      );
      throw new Restart("mismatch");
    }
    return { totalSize: total, sha256: sha, mimeType: mime, stats: this.stats };
  }
}
