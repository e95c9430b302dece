/**
 * Uploads: a Buffer, a file or a stream handed to a Computer with `client:put_blob`
 * (docs/protocol.md, "client:put_blob"), landing as a file under the Computer's landing root whose
 * absolute path a later `client:tool_call` can name.
 *
 * An upload goes like this:
 * 1. The source is hashed before anything is sent (`upload-source.ts`): the first chunk declares
 *    `total_size` and `sha256`, and the Computer checks the bytes against them.
 * 2. The first chunk goes alone: its ack allocates the `upload_id` and, when the request asked
 *    (`blob_format`), offers binary carriage; a Computer that does not know the field never offers
 *    it and the upload goes on in the spec's base64.
 * 3. The rest goes out in order, several chunks in flight: they arrive in order over the one
 *    connection, and the Computer checks each `chunk_offset` against what it received, so they
 *    need not wait for each other's acks. How big a chunk is and how many bytes may be in flight
 *    is the path's pacer's to say (`UploadPacer`, the same controller as the client's pulls).
 * 4. The final ack must name a `landing_path` and echo the declared size and digest.
 *
 * Failures: a chunk the Server refused as `busy` never reached the Computer, so the chunks after
 * it are answered `range` (the session is kept) and the upload rewinds to it once every answer
 * is in. A Computer at its concurrent-upload cap (4019 `busy`) is asked again after a backoff,
 * from offset 0 as the spec says. A Computer that went away, a lost answer or a session the
 * Computer forgot restarts from 0 with a new session, a bounded number of times (there is no
 * resume across sessions). Every other refusal is a typed 4019 error (errors.ts). Aborting stops
 * at once: there is no abort message, the Computer drops the session at its idle timeout and
 * never stores a file for it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { PROTOCOL_VERSION, base64Length, supportsFeature } from "@a2c-smcp/protocol";
import {
  ComputerNotFoundError,
  DisconnectedError,
  InvalidResponseError,
  InvalidUploadError,
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  UploadBusyError,
  UploadError,
  UploadRangeError,
  UploadUnsupportedError,
  abortError,
  asError,
} from "./errors.ts";
import { silentLogger, type AgentLogger } from "./logger.ts";
import type { Carriage } from "./path.ts";
import { openBody, type UploadBody, type UploadSource } from "./upload-source.ts";
import { FixedPacer, type PaceTicket, type UploadPacer } from "./upload-pacer.ts";
import { isSize, type PutAnswer, type PutChunk } from "./upload-wire.ts";

export { SPOOL_MEMORY_BYTES, type UploadSource } from "./upload-source.ts";
export { parsePutAnswer, putPayload, type PutAnswer, type PutChunk } from "./upload-wire.ts";
export { FixedPacer, PathPacer, type PaceTicket, type UploadPacer } from "./upload-pacer.ts";

// ---------------------------------------------------------------------------------------------
// Defaults, options and results

/**
 * The most chunks one upload keeps in flight (a ceiling; the pacer sets how many bytes): 15 of
 * the largest binary chunk, envelopes included, stay under the 8 MiB of upload chunks a Server
 * holds in flight to one Computer by default (its `--max-unread-bytes`); one more would be
 * refused `busy` and sent again.
 */
export const DEFAULT_UPLOAD_WINDOW = 15;
/**
 * The largest chunk sent as a binary attachment: under the Server's default `maxHttpBufferSize`
 * of 1 MB with its envelope (a larger message drops the connection).
 */
export const DEFAULT_BINARY_UPLOAD_CHUNK_BYTES = 512 * 1024;
/**
 * The largest chunk sent as base64, as a pull's (pull.ts): a chunk's string above about 96 KiB of
 * bytes costs fresh pages to build, send and decode at every hop, and the upload's rate falls by
 * a factor of five.
 */
export const DEFAULT_BASE64_UPLOAD_CHUNK_BYTES = 64 * 1024;
/** Restarts from 0 after the Computer went away, a lost answer or a forgotten session. */
export const DEFAULT_UPLOAD_RETRIES = 3;
/** Backoffs after 4019 `busy` (the Computer's concurrent uploads at their cap). */
export const DEFAULT_BUSY_RETRIES = 6;
/** The first backoff after `busy`; each next one doubles, up to `MAX_BUSY_BACKOFF_MS`. */
export const BUSY_BACKOFF_MS = 500;
export const MAX_BUSY_BACKOFF_MS = 8000;
/** How long one restart waits for the Computer to come back. */
export const DEFAULT_UPLOAD_RESUME_TIMEOUT_MS = 60_000;

export interface UploadProgress {
  /** Bytes the Computer acknowledged, in order. */
  bytes: number;
  total: number;
}

export interface UploadOptions {
  /** Suggested file name; the Computer sanitizes it into `<upload_id>_<name>`. */
  nameHint?: string;
  signal?: AbortSignal;
  /** Called after every acknowledged chunk. */
  onProgress?: (p: UploadProgress) => void;
  /**
   * Offer binary carriage (default true): the first chunk asks (`blob_format`) and later chunks
   * go as binary attachments when the Computer offers it. `false` is the spec's base64 only.
   */
  binary?: boolean;
  /** The largest chunk (a ceiling; the pacer sizes chunks to the path). */
  chunkBytes?: number;
  /** The most chunks in flight (a ceiling). Default 15. */
  window?: number;
  /** A fixed local ack wait per chunk. Default: the pacer's, or the client's request timeout. */
  timeoutMs?: number;
  /** Restarts from 0 after the Computer went away, a lost answer, a lost session. Default 3. */
  retries?: number;
  /** Backoffs after the Computer answered `busy`. Default 6 (about a minute in all). */
  busyRetries?: number;
  /** Longest wait for the Computer to come back before a restart. Default 60 s. */
  resumeTimeoutMs?: number;
  /** Where a stream longer than 8 MiB is spooled while it is hashed. Default the OS temp dir. */
  spoolDir?: string;
}

export interface UploadStats {
  /** `client:put_blob` requests sent. */
  requests: number;
  /** Payload bytes sent, every attempt and resent chunk included. */
  bytesSent: number;
  /** Bytes of `blob` as they travelled (base64 characters or attachment bytes). */
  wireBytes: number;
  /** Chunks the Server refused as `busy` (each sent again), and 4019 `busy` backoffs. */
  busy: number;
  /** Times the upload went back to a refused chunk within its session. */
  rewinds: number;
  /** Times the upload started again from 0 with a new session. */
  restarts: number;
  /** The upload's bytes over its duration (hashing included), bytes a second. */
  rate: number;
  /** The pacer's smoothed round trip of a chunk at the end, ms. */
  rttMs: number;
  elapsedMs: number;
}

export interface UploadResult {
  /** The stored file's absolute path on the Computer: name it verbatim in a tool call. */
  landingPath: string;
  totalSize: number;
  sha256: string;
  /** How the chunks after the first travelled (`base64` also for a single-chunk upload). */
  carriage: Carriage;
  stats: UploadStats;
}

// ---------------------------------------------------------------------------------------------
// What an upload needs from a connection

/** What an upload needs from a connection (`AgentClient` implements it). */
export interface ChunkUploader {
  readonly logger?: AgentLogger;
  /** One `client:put_blob`, its answer checked (`parsePutAnswer`); a flat error thrown typed. */
  putBlobChunk(
    computer: string,
    chunk: PutChunk,
    opts: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<PutAnswer>;
  waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;
  /** The pacer of the uplink to `computer` (the path controller); else a fixed one per upload. */
  uploadPacer?(computer: string): UploadPacer;
}

// ---------------------------------------------------------------------------------------------
// The public form

/**
 * Uploads `source` (bytes, a file path, or a stream) to `computer`; resolves once the Computer
 * stored it and echoed its size and digest.
 */
export async function uploadBlob(
  uploader: ChunkUploader,
  computer: string,
  source: UploadSource,
  opts: UploadOptions = {},
): Promise<UploadResult> {
  const started = performance.now();
  if (opts.signal?.aborted) throw abortError(opts.signal);
  // Upstream's `upload_unsupported_by_sdk`: a check on our own constant (peers past the
  // handshake speak our minor).
  if (!supportsFeature(PROTOCOL_VERSION, "putBlob")) {
    throw new UploadUnsupportedError(`protocol ${PROTOCOL_VERSION} has no client:put_blob`);
  }
  if (opts.chunkBytes !== undefined && !(opts.chunkBytes >= 1)) {
    throw new UploadError(
      "bad_chunk_size",
      `chunkBytes must be at least 1 (got ${opts.chunkBytes})`,
    );
  }
  const body = await openBody(source, {
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.spoolDir !== undefined ? { spoolDir: opts.spoolDir } : {}),
  });
  try {
    if (body.size === 0) {
      throw new UploadError("empty_payload", "nothing to upload: the source is empty");
    }
    const upload = new Upload(uploader, computer, body, opts);
    const result = await upload.run();
    const s = result.stats;
    s.elapsedMs = performance.now() - started;
    s.rate = s.elapsedMs > 0 ? (body.size * 1000) / s.elapsedMs : 0;
    return result;
  } finally {
    await body.close();
  }
}

// ---------------------------------------------------------------------------------------------
// One upload: attempts until one is stored

/** What to do after an attempt failed. */
type Next = "busy" | "gone" | "again" | "final";

class Upload {
  readonly stats: UploadStats = {
    requests: 0,
    bytesSent: 0,
    wireBytes: 0,
    busy: 0,
    rewinds: 0,
    restarts: 0,
    rate: 0,
    rttMs: 0,
    elapsedMs: 0,
  };
  readonly pacer: UploadPacer;
  readonly log: AgentLogger;
  readonly ceiling: { binary: number; base64: number };
  /** The Computer acknowledged a chunk of this upload (it exists and speaks put_blob). */
  reached = false;

  constructor(
    readonly uploader: ChunkUploader,
    readonly computer: string,
    readonly body: UploadBody,
    readonly opts: UploadOptions,
  ) {
    const window = Math.max(1, opts.window ?? DEFAULT_UPLOAD_WINDOW);
    this.ceiling = {
      binary: opts.chunkBytes ?? DEFAULT_BINARY_UPLOAD_CHUNK_BYTES,
      base64: opts.chunkBytes ?? DEFAULT_BASE64_UPLOAD_CHUNK_BYTES,
    };
    this.pacer =
      uploader.uploadPacer?.(computer) ??
      new FixedPacer(opts.binary === false ? this.ceiling.base64 : this.ceiling.binary, window);
    this.pacer.setLimit(window * Math.max(this.ceiling.binary, this.ceiling.base64), window);
    this.log = uploader.logger ?? silentLogger;
  }

  get window(): number {
    return Math.max(1, this.opts.window ?? DEFAULT_UPLOAD_WINDOW);
  }

  async run(): Promise<UploadResult> {
    try {
      return await this.attempts();
    } finally {
      this.pacer.close();
    }
  }

  private async attempts(): Promise<UploadResult> {
    const signal = this.opts.signal;
    let busyTries = 0;
    let retries = 0;
    for (;;) {
      try {
        return await new Attempt(this).run();
      } catch (err) {
        const next = this.classify(err);
        if (signal?.aborted) throw abortError(signal);
        if (next === "final") throw err;
        this.log.warn(
          { computer: this.computer, why: (err as Error).message, next },
          "upload starts again from offset 0",
        );
        if (next === "busy") {
          if (++busyTries > (this.opts.busyRetries ?? DEFAULT_BUSY_RETRIES)) throw err;
          this.stats.busy++;
          const ms = Math.min(MAX_BUSY_BACKOFF_MS, BUSY_BACKOFF_MS * 2 ** (busyTries - 1));
          await sleep(ms * (0.75 + Math.random() / 2), undefined, signal ? { signal } : {});
        } else {
          if (++retries > (this.opts.retries ?? DEFAULT_UPLOAD_RETRIES)) throw err;
          if (next === "gone") {
            await this.uploader.waitForComputer(this.computer, {
              ...(signal ? { signal } : {}),
              timeoutMs: this.opts.resumeTimeoutMs ?? DEFAULT_UPLOAD_RESUME_TIMEOUT_MS,
            });
          }
        }
        this.stats.restarts++;
      }
    }
  }

  private unsupported(cause: Error): UploadUnsupportedError {
    const { nameHint } = this.opts;
    return new UploadUnsupportedError(
      "the Computer does not accept uploads (client:put_blob unknown or unanswered); nothing was stored",
      {
        cause,
        totalSize: this.body.size,
        sha256: this.body.sha256,
        ...(nameHint !== undefined ? { nameHint } : {}),
      },
    );
  }

  /**
   * What a failed attempt means. A Computer that never answered a chunk of this upload and
   * answers `404 unknown_event`, or whose very first chunk got no answer, does not speak
   * put_blob (upstream's reading of a first-chunk timeout); one that is not in the office is not
   * waited for.
   */
  private classify(err: unknown): Next {
    if (err instanceof UploadBusyError) return "busy";
    if (err instanceof ServerError) return err.reason === "busy" ? "busy" : "again";
    if (err instanceof DisconnectedError) return "gone";
    if (err instanceof ComputerNotFoundError) {
      if (err.reason === "unknown_event") throw this.unsupported(err);
      return this.reached || err.reason === "disconnected" ? "gone" : "final";
    }
    if (err instanceof RequestTimeoutError) {
      if (!this.reached) throw this.unsupported(err);
      return "again";
    }
    if (err instanceof RelayTimeoutError) return "again";
    if (err instanceof InvalidUploadError || err instanceof UploadRangeError) return "again";
    return "final";
  }
}

/** One session: the first chunk alone, then the rest in flight, until the final ack. */
class Attempt {
  private uploadId: string | undefined;
  private binary = false;
  private next = 0;
  private acked = 0;
  private inflight = 0;
  /** The earliest chunk the Server refused as busy: sent again once every answer is in. */
  private rewindTo: number | undefined;
  private error: unknown;
  private result: UploadResult | undefined;
  private poke: (() => void) | undefined;
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;

  constructor(private readonly up: Upload) {
    const outer = up.opts.signal;
    this.signal = outer ? AbortSignal.any([outer, this.stop.signal]) : this.stop.signal;
  }

  async run(): Promise<UploadResult> {
    try {
      return await this.chunks();
    } finally {
      // Answers still in flight of a failed attempt are not waited for.
      this.stop.abort(new Error("upload attempt ended"));
    }
  }

  private async chunks(): Promise<UploadResult> {
    const { body, pacer } = this.up;
    for (;;) {
      if (this.error !== undefined) throw asError(this.error);
      if (this.result) return this.result;
      if (this.signal.aborted) throw abortError(this.signal);
      if (this.rewindTo !== undefined) {
        if (this.inflight > 0) {
          await this.changed();
          continue;
        }
        // Every answer is in: the Computer holds exactly the bytes before the refused chunk.
        this.next = this.rewindTo;
        this.rewindTo = undefined;
        this.up.stats.rewinds++;
        await sleep(Math.max(1, pacer.rttMs), undefined, { signal: this.signal });
        continue;
      }
      if (this.next >= body.size) {
        // Everything is in flight: the path's samples now say less than it could carry.
        pacer.idle();
        await this.changed();
        continue;
      }
      const first = this.uploadId === undefined;
      const len = Math.min(this.chunkLimit(), body.size - this.next);
      const room =
        this.inflight === 0 || (!first && this.inflight < this.up.window && pacer.maySend(len));
      if (!room) {
        await this.changed(pacer.paceWaitMs());
        continue;
      }
      await this.send(this.next, len);
    }
  }

  /**
   * The chunk size now: the pacer's, within the carriage's ceiling. A first chunk that asks for
   * binary carriage travels as base64 before the answer, so it keeps to the base64 default
   * whatever the binary ceiling: a larger base64 request could exceed the Server's buffer.
   */
  private chunkLimit(): number {
    const { ceiling, opts } = this.up;
    const asking = this.uploadId === undefined && opts.binary !== false;
    const limit = this.binary
      ? ceiling.binary
      : asking
        ? Math.min(ceiling.base64, DEFAULT_BASE64_UPLOAD_CHUNK_BYTES)
        : ceiling.base64;
    return this.up.pacer.chunkBytes(limit);
  }

  /** Resolves at the next answer (or failure) of any chunk of this attempt, or after `ms` (> 0). */
  private changed(ms = 0): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms > 0 ? setTimeout(() => this.wake(), ms) : undefined;
      timer?.unref?.();
      this.poke = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private wake(): void {
    const p = this.poke;
    this.poke = undefined;
    p?.();
  }

  /** Reads and emits the chunk at `offset` (answers arrive in `answered` / `failed`). */
  private async send(offset: number, len: number): Promise<void> {
    const { body, opts, pacer, stats, uploader, computer } = this.up;
    const bytes = await body.read(offset, len);
    if (this.rewindTo !== undefined || this.error !== undefined) return;
    const eof = offset + len === body.size;
    if (eof && body.unchanged && !(await body.unchanged())) {
      throw new UploadError("source_changed", "the file changed while it was uploaded");
    }
    const first = this.uploadId === undefined;
    const chunk: PutChunk = { offset, eof, blob: bytes };
    if (first) {
      chunk.declaration = {
        totalSize: body.size,
        sha256: body.sha256,
        ...(opts.nameHint !== undefined ? { nameHint: opts.nameHint } : {}),
      };
      if (opts.binary !== false) chunk.blobFormat = "base64";
    } else {
      chunk.uploadId = this.uploadId;
      if (this.binary) chunk.blobFormat = "binary";
    }
    if (!this.binary) chunk.asBase64 = true;
    stats.requests++;
    stats.bytesSent += len;
    stats.wireBytes += this.binary ? len : base64Length(len);
    this.next = offset + len;
    this.inflight++;
    const ticket = pacer.sent(len, first);
    const timeoutMs = opts.timeoutMs ?? (first ? undefined : pacer.ackTimeoutMs);
    const done = uploader.putBlobChunk(computer, chunk, {
      signal: this.signal,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    const settled = (): void => {
      this.inflight--;
    };
    const answered = done.then(
      (ret) => {
        settled();
        pacer.answered(ticket, len);
        this.answered(offset, len, eof, ret);
      },
      (err: unknown) => {
        settled();
        this.failed(offset, err, ticket);
      },
    );
    // The first chunk teaches the upload id: nothing else goes out before its answer.
    if (first) await answered;
  }

  private answered(offset: number, len: number, eof: boolean, ret: PutAnswer): void {
    if (this.uploadId === undefined) {
      this.uploadId = ret.uploadId;
      this.binary = this.up.opts.binary !== false && ret.binaryOffered;
    }
    this.up.reached = true;
    if (ret.uploadId !== this.uploadId || ret.chunkOffset !== offset) {
      this.error ??= new InvalidResponseError(
        `client:put_blob: the ack of the chunk at ${offset} names another upload or offset`,
      );
    } else {
      this.acked = Math.max(this.acked, offset + len);
      this.up.opts.onProgress?.({ bytes: this.acked, total: this.up.body.size });
      if (eof) this.finished(ret);
    }
    this.wake();
  }

  /** The final ack: a landing path, and the declared size and digest echoed. */
  private finished(ret: PutAnswer): void {
    const { body, stats } = this.up;
    if (typeof ret.landingPath !== "string" || ret.landingPath === "") {
      this.error ??= new UploadError("incomplete_ack", "the final ack names no landing_path");
      return;
    }
    const sha = typeof ret.sha256 === "string" ? ret.sha256 : body.sha256;
    const size = isSize(ret.totalSize) ? ret.totalSize : body.size;
    if (sha !== body.sha256 || size !== body.size) {
      this.error ??= new UploadError(
        "echo_mismatch",
        `the Computer stored ${size} bytes of sha256 ${sha}, not the ${body.size} of ${body.sha256} sent`,
      );
      return;
    }
    stats.rttMs = this.up.pacer.rttMs;
    this.result = {
      landingPath: ret.landingPath,
      totalSize: size,
      sha256: sha,
      carriage: this.binary ? "binary" : "base64",
      stats,
    };
  }

  private failed(offset: number, err: unknown, ticket: PaceTicket): void {
    const { pacer, stats } = this.up;
    if (err instanceof ServerError && err.reason === "busy" && this.uploadId !== undefined) {
      // Refused by the Server: this chunk never reached the Computer, so neither will any after
      // it in order. Slow down and send again from here.
      stats.busy++;
      pacer.busy(ticket);
      this.rewindTo = Math.min(this.rewindTo ?? offset, offset);
    } else if (
      err instanceof UploadRangeError &&
      this.rewindTo !== undefined &&
      offset > this.rewindTo
    ) {
      // A chunk after the refused one: the Computer kept the session, nothing to do.
      pacer.abandoned(ticket);
    } else {
      if (err instanceof RequestTimeoutError || err instanceof RelayTimeoutError) {
        pacer.timeout(ticket);
      } else pacer.abandoned(ticket);
      this.error ??= err;
    }
    this.wake();
  }
}
