/**
 * `AgentClient`: the Agent's connection to a Server (docs/protocol.md).
 *
 * Three layers, each calling the one below: this file (the `client:*` requests, blob pulls, the
 * check of a `client:get_blob` answer, and `client:tool_call` with its local timeout, cancel and
 * sideband restore), `client-office.ts` (office membership, Computer tracking, rejoin after a
 * reconnect) and `client-connection.ts` (socket, 4008/401 handling, `req_id`s, the acks waited
 * for). Every public name of the client is exported from here.
 */
import { brotliDecompressSync, gunzipSync, inflateSync, type ZlibOptions } from "node:zlib";
import {
  CallToolResultSchema,
  Events,
  GetSkillRetSchema,
  GetSkillsRetSchema,
  GetToolsRetSchema,
  base64DecodedLength,
  IDENTITY,
  isErrorPayload,
  isGetBlobRet,
  type A2CSkillRef,
  type CallToolResult,
  type ContentCoding,
  type GetBlobRet,
  type GetSkillRet,
  type SMCPTool,
} from "@a2c-smcp/protocol";
import { OfficeClient } from "./client-office.ts";
import {
  ChunkContractError,
  InvalidResponseError,
  RequestTimeoutError,
  abortError,
  protocolErrorFromWire,
} from "./errors.ts";
import { ComputerPath, type PathOptions } from "./path.ts";
import { RateLimit } from "./rate-limit.ts";
import { PathController } from "./path-controller.ts";
import { PathPacer, type UploadPacer } from "./upload-pacer.ts";
import {
  DEFAULT_MAX_IN_MEMORY_BYTES,
  blobChunks,
  downloadBlob,
  readBlob,
  type BlobChunk,
  type ChunkFetcher,
  type ChunkRequest,
  type DownloadOptions,
  type PullInfo,
  type PullOptions,
} from "./pull.ts";
import { restoreSideband } from "./sideband.ts";
import { drainSkill } from "./skill.ts";
import type { FileSinkResult } from "./file-sink.ts";
import {
  parsePutAnswer,
  putPayload,
  uploadBlob,
  type PutAnswer,
  type ChunkUploader,
  type PutChunk,
  type UploadOptions,
  type UploadResult,
  type UploadSource,
} from "./upload.ts";

import type { AgentClientOptions, RequestOptions } from "./client-connection.ts";

export {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type AgentClientEvents,
  type AgentClientOptions,
  type RequestOptions,
} from "./client-connection.ts";
export { REJOIN_ATTEMPTS } from "./client-office.ts";

/** Added to a tool's own `timeout` for the local wait (the Server relays with timeout + 5 s). */
export const DEFAULT_TOOL_TIMEOUT_MARGIN_MS = 10_000;
/** Default tool timeout in seconds when the caller gives none. */
export const DEFAULT_TOOL_TIMEOUT_S = 60;
/** After a local cancel, how long the Computer's cancelled answer is awaited. */
export const CANCEL_GRACE_MS = 5_000;

export interface GetSkillOptions extends RequestOptions {
  /** Options for draining a text handle into `body` (`maxBytes` bounds it, D45). */
  pull?: PullOptions;
}

export interface CallToolOptions {
  /** Seconds (the wire `timeout`). Default 60. */
  timeout?: number;
  /** Restore sidebanded items (default true). With false the handles are returned untouched. */
  restore?: boolean;
  /** Options for pulling sidebanded items (`maxBytes` bounds all of them together, D45). */
  pull?: PullOptions;
  /** Aborting emits `server:tool_call_cancel` and waits briefly for the cancelled answer. */
  signal?: AbortSignal;
  /** Called with the call's `req_id` (e.g. for `cancelToolCall`). */
  onRequestId?: (reqId: string) => void;
}

/** The spec's local timeout result. */
function localTimeoutResult(): CallToolResult {
  return {
    content: [{ type: "text", text: "Tool call timeout" }],
    isError: true,
    meta: { a2c_timeout: true },
  };
}

function localCancelResult(): CallToolResult {
  return {
    content: [{ type: "text", text: "Tool call cancelled" }],
    isError: true,
    meta: { a2c_cancelled: true, a2c_cancel_reason: "agent_requested" },
  };
}

/** The Agent SDK's client: connection and office (base classes) plus the requests below. */
export class AgentClient extends OfficeClient implements ChunkFetcher, ChunkUploader {
  /**
   * One path controller per Computer uploaded to: the uplink's rate and queue are not the
   * downlink's a pull measures (path-controller.ts, the same component).
   */
  private readonly uplinks = new Map<string, PathController>();
  /** One path per Computer pulled from (path.ts); forgotten when the Computer leaves. */
  private readonly paths = new Map<string, ComputerPath>();
  private readonly pathOptions: PathOptions;
  /** Where base64 chunks are decoded (`releaseChunk` gives them back). */
  private readonly decodeBuffers = new DecodeBuffers();
  /** The rate cap every pull of this client shares (`maxRate`), if any. */
  readonly rateLimit: RateLimit | undefined;

  constructor(opts: AgentClientOptions) {
    super(opts);
    this.pathOptions =
      opts.targetDelayMs !== undefined ? { targetDelayMs: opts.targetDelayMs } : {};
    this.rateLimit =
      opts.maxRate !== undefined ? new RateLimit(opts.maxRate, performance.now()) : undefined;
    // A Computer that left (or our own reconnect) may come back on another route: its next pull
    // measures the path afresh.
    this.on("computer_left", (c) => {
      this.paths.get(c)?.reset();
      this.uplinks.get(c)?.reset();
    });
    this.on("disconnected", () => {
      for (const p of [...this.paths.values(), ...this.uplinks.values()]) p.reset();
    });
  }

  /** `client:get_tools`. */
  override async getTools(computer: string, opts: RequestOptions = {}): Promise<SMCPTool[]> {
    return (await this.clientRequest(Events.GetTools, computer, {}, GetToolsRetSchema, opts)).tools;
  }

  /** `client:get_skills`. */
  override async getSkills(computer: string, opts: RequestOptions = {}): Promise<A2CSkillRef[]> {
    const ret = await this.clientRequest(Events.GetSkills, computer, {}, GetSkillsRetSchema, opts);
    return ret.skills;
  }

  /** `client:get_skill` exactly as answered (no drain, no verification). */
  async getSkillRaw(
    computer: string,
    name: string,
    relPath?: string,
    opts: RequestOptions = {},
  ): Promise<GetSkillRet> {
    const body: Record<string, unknown> = { name };
    if (relPath !== undefined) body.rel_path = relPath;
    return this.clientRequest(Events.GetSkill, computer, body, GetSkillRetSchema, opts);
  }

  /**
   * `client:get_skill`, then: an inline `body` is verified against `sha256`; a TEXT handle is
   * drained, verified and decoded into `body` (and `blob_handle` removed); a binary handle is
   * returned for the caller to pull (`readBlob` / `downloadBlob`).
   */
  async getSkill(
    computer: string,
    name: string,
    relPath?: string,
    opts: GetSkillOptions = {},
  ): Promise<GetSkillRet> {
    const ret = await this.getSkillRaw(computer, name, relPath, opts);
    const pull: PullOptions = { ...(opts.signal ? { signal: opts.signal } : {}), ...opts.pull };
    return drainSkill(ret, (handle, po) => this.readBlob(computer, handle, { ...pull, ...po }));
  }

  /**
   * One `client:get_blob` exactly as answered (its shape validated; a flat error is thrown typed).
   * The pull uses `fetchChunk`, which also checks the answer against what was asked.
   */
  getBlobChunk(computer: string, handle: string, req: ChunkRequest): Promise<GetBlobRet> {
    const timeoutMs = req.timeoutMs ?? this.wire.requestTimeoutMs;
    const payload = this.blobPayload(computer, handle, req);
    return this.wire.request(Events.GetBlob, payload, timeoutMs, req.signal, (args) =>
      parseBlobAnswer(args[0]),
    );
  }

  /**
   * One chunk for the pull: `client:get_blob`, its answer checked inside the ack callback against
   * its shape and against what was asked (`readChunk`), and a base64 `blob` decoded there into
   * bytes of its own. Why decode in the callback: a chunk's string (about 88 KB at the base64
   * chunk size) held through the promise chain to the pull is often alive when a scavenge runs,
   * gets promoted, and fills the old generation with dead chunks between full collections; a
   * string that dies within the callback never is.
   */
  fetchChunk(computer: string, handle: string, req: ChunkRequest): Promise<BlobChunk> {
    const timeoutMs = req.timeoutMs ?? this.wire.requestTimeoutMs;
    const payload = this.blobPayload(computer, handle, req);
    return this.wire.request(Events.GetBlob, payload, timeoutMs, req.signal, (args) =>
      readChunk(parseBlobAnswer(args[0]), req, this.decodeBuffers),
    );
  }

  /** Takes back the bytes of a chunk `fetchChunk` decoded, once the pull copied them away. */
  releaseChunk(bytes: Buffer): void {
    this.decodeBuffers.give(bytes);
  }

  /** The path to `computer` every pull through this client shares (created on first use). */
  pathTo(computer: string): ComputerPath {
    let path = this.paths.get(computer);
    if (!path) {
      path = new ComputerPath(this, computer, this.pathOptions);
      this.paths.set(computer, path);
    }
    return path;
  }

  private blobPayload(computer: string, handle: string, req: ChunkRequest): object {
    const payload: Record<string, unknown> = {
      agent: this.name,
      req_id: this.wire.nextReqId(),
      computer,
      blob_handle: handle,
      chunk_offset: req.offset,
    };
    if (req.maxChunkBytes > 0) payload.max_chunk_bytes = req.maxChunkBytes;
    if (req.binary) payload.blob_format = "binary";
    if (req.codings && req.codings.length > 0) payload.content_encoding = req.codings;
    return payload;
  }

  /** Pulls a whole blob into memory (see `agent/pull.ts`). */
  readBlob(computer: string, handle: string, opts: PullOptions = {}): Promise<Buffer> {
    return readBlob(this, computer, handle, opts);
  }

  /** Pulls a blob into a file (partial file + positional writes + fsync + rename; `resume`). */
  downloadBlob(
    computer: string,
    handle: string,
    path: string,
    opts: DownloadOptions = {},
  ): Promise<PullInfo & FileSinkResult> {
    return downloadBlob(this, computer, handle, path, opts);
  }

  /** The blob as an in-order async iterable of Buffers. */
  blobChunks(
    computer: string,
    handle: string,
    opts: PullOptions = {},
  ): AsyncGenerator<Buffer, PullInfo | undefined, undefined> {
    return blobChunks(this, computer, handle, opts);
  }

  /**
   * Uploads `source` (bytes, a file path, or a stream) to `computer` with `client:put_blob` (see
   * `agent/upload.ts`); resolves with the stored file's `landingPath` once the Computer echoed
   * the declared size and sha256.
   */
  uploadBlob(
    computer: string,
    source: UploadSource,
    opts: UploadOptions = {},
  ): Promise<UploadResult> {
    return uploadBlob(this, computer, source, opts);
  }

  /** The pacer of one upload to `computer`, on the controller every upload to it shares. */
  uploadPacer(computer: string): UploadPacer {
    let ctl = this.uplinks.get(computer);
    if (!ctl) this.uplinks.set(computer, (ctl = new PathController(this.pathOptions)));
    return new PathPacer(ctl);
  }

  /** One `client:put_blob` chunk, its answer checked inside the ack callback. */
  putBlobChunk(
    computer: string,
    chunk: PutChunk,
    opts: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<PutAnswer> {
    const payload = putPayload(this.name, this.wire.nextReqId(), computer, chunk);
    const timeoutMs = opts.timeoutMs ?? this.wire.requestTimeoutMs;
    return this.wire.request(Events.PutBlob, payload, timeoutMs, opts.signal, (args) =>
      parsePutAnswer(args[0]),
    );
  }

  /** `server:tool_call_cancel` for a call's `req_id` (fire-and-forget; no ack expected). */
  cancelToolCall(reqId: string): void {
    if (!this.socket?.connected) return;
    this.socket.emit(Events.ToolCallCancel, { agent: this.name, req_id: reqId });
  }

  /**
   * `client:tool_call`. The local wait is `timeout` + a margin; when it runs out the call is
   * cancelled and the spec's local timeout result returned. Sidebanded items are
   * restored (verified against `a2c_sha256` / `a2c_total_size`) unless `restore: false`.
   * Result-level markers are read from `meta`, or from `_meta` when only that is present.
   */
  async callTool(
    computer: string,
    tool: string,
    params: Record<string, unknown> = {},
    opts: CallToolOptions = {},
  ): Promise<CallToolResult> {
    const timeout = opts.timeout ?? DEFAULT_TOOL_TIMEOUT_S;
    const reqId = this.nextReqId();
    opts.onRequestId?.(reqId);
    const payload = {
      agent: this.name,
      req_id: reqId,
      computer,
      tool_name: tool,
      params,
      timeout,
    };
    const localWait =
      timeout * 1000 + (this.opts.toolTimeoutMarginMs ?? DEFAULT_TOOL_TIMEOUT_MARGIN_MS);
    const cancelWait = new AbortController();
    const onAbort = (): void => {
      this.cancelToolCall(reqId);
      // Give the Computer a moment to answer with its cancelled result.
      setTimeout(() => cancelWait.abort(), CANCEL_GRACE_MS).unref();
    };
    if (opts.signal?.aborted) throw abortError(opts.signal);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let answer: unknown;
    try {
      [answer] = await this.emitWithAck(Events.ToolCall, payload, localWait, cancelWait.signal);
    } catch (err) {
      if (err instanceof RequestTimeoutError) {
        this.cancelToolCall(reqId);
        return localTimeoutResult();
      }
      if (cancelWait.signal.aborted) return localCancelResult();
      throw err;
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
    const result = normalizeResultMeta(
      this.parseAnswer(Events.ToolCall, answer, CallToolResultSchema),
    );
    if (opts.restore === false) return result;
    const pull: PullOptions = { ...(opts.signal ? { signal: opts.signal } : {}), ...opts.pull };
    const maxBytes = pull.maxBytes ?? DEFAULT_MAX_IN_MEMORY_BYTES;
    return restoreSideband(
      result,
      (item) =>
        this.readBlob(computer, item.handle, {
          ...pull,
          expectedSha256: item.sha256,
          expectedSize: item.totalSize,
        }),
      maxBytes,
    );
  }
}

/** Consumers "SHOULD accept both spellings at result level, preferring `meta`" (D25). */
export function normalizeResultMeta(result: CallToolResult): CallToolResult {
  const raw = result as CallToolResult & { _meta?: unknown };
  if (result.meta === undefined && raw._meta && typeof raw._meta === "object") {
    return { ...result, meta: raw._meta as CallToolResult["meta"] };
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// The answer to a `client:get_blob`

/** The answer as a `GetBlobRet`; a flat ErrorPayload is thrown typed, anything else invalid. */
export function parseBlobAnswer(answer: unknown): GetBlobRet {
  if (isErrorPayload(answer)) throw protocolErrorFromWire(answer);
  if (!isGetBlobRet(answer)) {
    throw new InvalidResponseError(`${Events.GetBlob}: answer does not match the protocol schema`);
  }
  return answer;
}

/**
 * The chunk an answer carries, checked against what was asked: an answer is never trusted
 * (docs/protocol.md §6.9). It must start where it was asked, be no longer than asked, stay inside
 * its `total_size`, have an `eof` that agrees with its length, make progress unless at the end,
 * and carry valid base64 when it is a string (decoded here, never longer than asked). A coded
 * chunk (D63, D65) must be in a coding that was asked for and decode to exactly its
 * `decoded_size`, itself no more than asked: it is decoded with the output bounded at that size,
 * so a chunk that would decode longer stops there, never a larger allocation. Whether it belongs
 * to the read at hand (`sha256`, `total_size`, `mime_type`) is the pull's to check.
 */
export function readChunk(
  ret: GetBlobRet,
  req: ChunkRequest,
  buffers: DecodeBuffers = new DecodeBuffers(),
): BlobChunk {
  const at = req.offset;
  if (ret.chunk_offset !== at) {
    throw new ChunkContractError(at, `answer starts at ${ret.chunk_offset}, not where asked`);
  }
  const asked = req.maxChunkBytes > 0 ? req.maxChunkBytes : Number.POSITIVE_INFINITY;
  const blob = ret.blob;
  const coding = ret.content_encoding ?? null;
  const wireBytes = typeof blob === "string" ? blob.length : blob.byteLength;
  const bytes =
    coding !== null && coding !== IDENTITY
      ? decodeChunk(ret, req, coding, asked, buffers)
      : carried(blob, at, asked, buffers);
  const len = bytes.length;
  if (ret.decoded_size !== undefined && ret.decoded_size !== len) {
    throw new ChunkContractError(at, `decoded_size ${ret.decoded_size} but ${len} bytes`);
  }
  const total = ret.total_size;
  if (at + len > total) throw new ChunkContractError(at, `overruns total_size ${total}`);
  if (ret.eof !== (at + len === total)) {
    throw new ChunkContractError(at, `eof=${ret.eof} disagrees with ${len} bytes of ${total}`);
  }
  if (len === 0 && at < total) throw new ChunkContractError(at, "empty chunk without eof");
  return {
    offset: at,
    bytes,
    eof: ret.eof,
    totalSize: total,
    sha256: ret.sha256,
    mimeType: ret.mime_type,
    carriage: typeof blob === "string" ? "base64" : "binary",
    coding,
    wireBytes,
  };
}

/**
 * The bytes `blob` carried: a base64 string decoded into a buffer of `buffers` (valid base64, at
 * most `limit` bytes, or a `ChunkContractError`), a binary attachment as it came.
 */
function carried(
  blob: GetBlobRet["blob"],
  at: number,
  limit: number,
  buffers: DecodeBuffers,
): Buffer {
  if (typeof blob !== "string") {
    const bytes = Buffer.isBuffer(blob)
      ? blob
      : blob instanceof Uint8Array
        ? Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength)
        : Buffer.from(blob);
    if (bytes.length > limit) {
      throw new ChunkContractError(at, `${bytes.length} bytes, more than the ${limit} asked`);
    }
    return bytes;
  }
  const n = blob.length;
  const len = base64DecodedLength(n, blob.charCodeAt(n - 1), blob.charCodeAt(n - 2));
  if (len < 0) throw new ChunkContractError(at, "blob is not valid base64");
  if (len > limit) throw new ChunkContractError(at, `${len} bytes, more than the ${limit} asked`);
  const bytes = buffers.take(len);
  if (len > 0 && bytes.write(blob, 0, len, "base64") !== len) {
    buffers.give(bytes);
    throw new ChunkContractError(at, "blob is not valid base64");
  }
  return bytes;
}

const DECODERS: Readonly<Record<ContentCoding, (b: Buffer, o: ZlibOptions) => Buffer>> = {
  br: brotliDecompressSync,
  gzip: gunzipSync,
  deflate: inflateSync,
};

/**
 * The bytes of a coded chunk (D65): `decoded_size` must be given and within what was asked, the
 * coding one the request listed, and `blob` must decode to exactly `decoded_size` bytes. The
 * decoder stops at `decoded_size` bytes of output (zlib's `maxOutputLength`), so a chunk that
 * would decode to more (a bomb) costs at most that; any failure is a `ChunkContractError`.
 */
function decodeChunk(
  ret: GetBlobRet,
  req: ChunkRequest,
  coding: string,
  asked: number,
  buffers: DecodeBuffers,
): Buffer {
  const at = req.offset;
  const size = ret.decoded_size;
  const decode = req.codings?.includes(coding as ContentCoding)
    ? DECODERS[coding as ContentCoding]
    : undefined;
  if (!decode) throw new ChunkContractError(at, `content_encoding ${coding} was not asked for`);
  if (size === undefined) throw new ChunkContractError(at, `${coding} chunk without decoded_size`);
  if (size > asked) {
    throw new ChunkContractError(at, `decoded_size ${size}, more than the ${asked} asked`);
  }
  if (at + size > ret.total_size) {
    throw new ChunkContractError(at, `overruns total_size ${ret.total_size}`);
  }
  const coded = carried(ret.blob, at, Number.POSITIVE_INFINITY, buffers);
  let bytes: Buffer;
  try {
    // maxOutputLength must be at least 1; a chunk of 0 bytes that decodes to 1 fails below.
    bytes = decode(coded, { maxOutputLength: Math.max(1, size) });
  } catch (err) {
    const what =
      (err as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE"
        ? `decodes to more than its decoded_size ${size}`
        : `is not valid ${coding} data (its decoded_size: ${size})`;
    throw new ChunkContractError(at, `${coding} blob ${what}`);
  } finally {
    buffers.give(coded); // only a buffer of `buffers` goes back
  }
  if (bytes.length !== size) {
    throw new ChunkContractError(
      at,
      `${coding} blob decodes to ${bytes.length} bytes, not ${size}`,
    );
  }
  return bytes;
}

/**
 * The buffers base64 chunks are decoded into, reused once the pull has copied a chunk away
 * (`AgentClient.releaseChunk`). Why: a pull in base64 decodes its whole blob chunk by chunk, and
 * a fresh buffer for each made the process allocate and collect the blob's size again (in a
 * 256 MiB read, 23 full collections instead of 2, and a fifth more CPU). Buffers come in one
 * size, the largest chunk asked lately; a larger request starts a new set.
 */
export class DecodeBuffers {
  private size = 0;
  private readonly free: ArrayBuffer[] = [];
  private readonly mine = new WeakSet<ArrayBufferLike>();

  /** A buffer of `len` bytes (a view of a pooled one). */
  take(len: number): Buffer {
    if (len > this.size) {
      this.size = len;
      this.free.length = 0;
    }
    let store = this.free.pop();
    if (!store) {
      store = Buffer.allocUnsafeSlow(this.size).buffer;
      this.mine.add(store);
    }
    return Buffer.from(store, 0, len);
  }

  /** Gives back a buffer `take` handed out (anything else is ignored). */
  give(bytes: Buffer): void {
    const store = bytes.buffer;
    if (!(store instanceof ArrayBuffer) || !this.mine.has(store)) return;
    if (store.byteLength !== this.size || this.free.length >= MAX_FREE_DECODE_BUFFERS) return;
    if (this.free.includes(store)) return;
    this.free.push(store);
  }
}

/** Free decode buffers kept at most (a pull holds about two windows of chunks). */
const MAX_FREE_DECODE_BUFFERS = 64;
