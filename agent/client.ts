/**
 * `AgentClient`: the Agent's connection to a Server (docs/protocol.md).
 *
 * Split in three layers so each reads in one sitting: `client-connection.ts` (socket, 4008/401
 * handling, `req_id`s, acks, typed errors), `client-office.ts` (office membership, Computer
 * tracking, rejoin after a reconnect) and this file: the `client:*` requests, blob pulls and
 * `client:tool_call` (local timeout + cancel, sideband restore). Every public name of the client
 * is exported from here, as before the split.
 */
import {
  CallToolResultSchema,
  Events,
  GetSkillRetSchema,
  GetSkillsRetSchema,
  GetToolsRetSchema,
  type A2CSkillRef,
  type CallToolResult,
  type GetBlobRet,
  type GetSkillRet,
  type SMCPTool,
} from "@a2c-smcp/protocol";
import { parseBlobAnswer } from "./blob-answer.ts";
import type { RequestOptions } from "./client-connection.ts";
import { OfficeClient } from "./client-office.ts";
import { RequestTimeoutError, abortError } from "./errors.ts";
import {
  blobChunks,
  downloadBlob,
  readBlob,
  type ChunkFetcher,
  type ChunkRequest,
  type PullInfo,
  type PullOptions,
} from "./pull.ts";
import { decodeBlobEarly } from "./pull-chunk.ts";
import { restoreSideband } from "./sideband.ts";
import { drainSkill } from "./skill.ts";
import type { FileSinkResult } from "./sinks.ts";

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
  /** Options for draining a text handle into `body`. */
  pull?: PullOptions;
}

export interface CallToolOptions {
  /** Seconds (the wire `timeout`). Default 60. */
  timeout?: number;
  /** Restore sidebanded items (default true). With false the handles are returned untouched. */
  restore?: boolean;
  /** Options for pulling sidebanded items. */
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
export class AgentClient extends OfficeClient implements ChunkFetcher {
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
   * One raw `client:get_blob` (validated; a flat error is thrown typed). The pull loop sends
   * hundreds a second, so the answer is checked and settled inside the ack callback: one promise,
   * no schema walk (blob-answer.ts).
   */
  getBlobChunk(computer: string, handle: string, req: ChunkRequest): Promise<GetBlobRet> {
    const payload: Record<string, unknown> = {
      agent: this.name,
      req_id: this.nextReqId(),
      computer,
      blob_handle: handle,
      chunk_offset: req.offset,
    };
    if (req.maxChunkBytes > 0) payload.max_chunk_bytes = req.maxChunkBytes;
    if (req.binary) payload.blob_format = "binary";
    const into = req.decodeInto;
    const early = into !== undefined || req.decodeEarly === true;
    const timeoutMs = req.timeoutMs ?? this.requestTimeoutMs;
    return this.request(Events.GetBlob, payload, timeoutMs, req.signal, (args) => {
      if (early) decodeBlobEarly(args, into);
      return parseBlobAnswer(args[0]);
    });
  }

  /** Pulls a whole blob into memory (see `agent/pull.ts`). */
  readBlob(computer: string, handle: string, opts: PullOptions = {}): Promise<Buffer> {
    return readBlob(this, computer, handle, opts);
  }

  /** Pulls a blob into a file (temp + positional writes + fsync + rename). */
  downloadBlob(
    computer: string,
    handle: string,
    path: string,
    opts: PullOptions = {},
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
    return restoreSideband(result, (item) =>
      this.readBlob(computer, item.handle, {
        ...pull,
        expectedSha256: item.sha256,
        expectedSize: item.totalSize,
      }),
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
