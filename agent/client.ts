/**
 * `AgentClient`: the Agent's connection to a Server (digest §1.2–§1.10, §2, §3).
 *
 * - Connects to `${url}/smcp` with `a2c_version` = PROTOCOL_VERSION (never user input), polling
 *   first ("SDK MUST NOT default to WebSocket-only"), the token in `auth` and never `role`.
 * - A 4008 handshake is parsed from the HTTP 400 body into a `ProtocolVersionError`, after
 *   `disconnect()` ("MUST call disconnect() explicitly before surfacing the error"), no retry.
 * - Joins one office, tracks its Computers from `notify:*`, and rejoins after a reconnect.
 * - Every request gets a fresh, never reused `req_id`; `client:get_*` wait ≥ 30 s by default;
 *   a flat ErrorPayload becomes a typed `ProtocolError` subclass; our own disconnect is learned
 *   from socket.io's `disconnect` event, never from an ack timeout (digest §1.9).
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { io, type Socket } from "socket.io-client";
import {
  CallToolResultSchema,
  DEFAULT_ENGINE_PATH,
  EnterOfficeNotificationSchema,
  Events,
  GetBlobRetSchema,
  GetSkillRetSchema,
  GetSkillsRetSchema,
  GetToolsRetSchema,
  ListRoomRetSchema,
  NAMESPACE,
  PROTOCOL_VERSION,
  UpdateComputerConfigReqSchema,
  VERSION_QUERY_PARAM,
  isErrorPayload,
  type A2CSkillRef,
  type CallToolResult,
  type GetBlobRet,
  type GetSkillRet,
  type SMCPTool,
  type SessionInfo,
} from "../protocol/index.ts";
import { classifyConnectError } from "./connect-error.ts";
import {
  DisconnectedError,
  InvalidResponseError,
  JoinOfficeError,
  ProtocolVersionError,
  AuthError,
  RequestTimeoutError,
  abortError,
  asError,
  protocolErrorFromWire,
} from "./errors.ts";
import { log } from "./log.ts";
import {
  blobChunks,
  downloadBlob,
  readBlob,
  type ChunkFetcher,
  type ChunkRequest,
  type PullInfo,
  type PullOptions,
} from "./pull.ts";
import { restoreSideband } from "./sideband.ts";
import { drainSkill } from "./skill.ts";
import type { FileSinkResult } from "./sinks.ts";
import type { z } from "zod";

/** Default local ack wait for `client:get_*` and `server:*` (digest §1.8: SHOULD be ≥ 30 s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Added to a tool's own `timeout` for the local wait (the Server relays with timeout + 5 s). */
export const DEFAULT_TOOL_TIMEOUT_MARGIN_MS = 10_000;
/** Default tool timeout in seconds when the caller gives none. */
export const DEFAULT_TOOL_TIMEOUT_S = 60;
/** Rejoin attempts after a reconnect when the Server still holds our old seat. */
export const REJOIN_ATTEMPTS = 8;
/** After a local cancel, how long the Computer's cancelled answer is awaited. */
export const CANCEL_GRACE_MS = 5_000;

export interface AgentClientOptions {
  /** Server base URL, e.g. `http://127.0.0.1:7000` (the `/smcp` namespace is added). */
  url: string;
  /** Sent as `auth.token`. */
  token?: string;
  /** The Agent's name in its office (`AgentCallData.agent`). Default `agent-<random>`. */
  name?: string;
  /** Engine.IO path. Default `/socket.io/`. */
  path?: string;
  /** Local ack wait for `client:get_*` / `server:*`. Default 30 s; never below 1 ms. */
  requestTimeoutMs?: number;
  /** Added to a tool call's `timeout` for the local wait. Default 10 s. */
  toolTimeoutMarginMs?: number;
  /**
   * Checklist 71: fetch `client:get_tools` when a Computer enters and on `notify:update_tool_list`,
   * `client:get_skills` on `notify:update_skills`, and emit `tools` / `skills`. Default false.
   */
  autoRefresh?: boolean;
  /** socket.io reconnection delays. */
  reconnectionDelayMs?: number;
  reconnectionDelayMaxMs?: number;
  /** Handshake timeout. Default 20 s. */
  connectTimeoutMs?: number;
}

/** Events of `AgentClient` (an EventEmitter). */
export interface AgentClientEvents {
  /** A Computer entered the office (or was found there after a (re)join). */
  computer_joined: [computer: string];
  /** A Computer left the office (or was gone after a reconnect). */
  computer_left: [computer: string];
  /** `notify:update_skills`: re-fetch with `getSkills` (or use `autoRefresh`). */
  skills_updated: [computer: string];
  /** `notify:update_tool_list`: re-fetch with `getTools` (or use `autoRefresh`). */
  tools_updated: [computer: string];
  /** `notify:update_config` / `notify:update_desktop`. */
  config_updated: [computer: string];
  desktop_updated: [computer: string];
  /** With `autoRefresh`: fresh lists. */
  tools: [computer: string, tools: SMCPTool[]];
  skills: [computer: string, skills: A2CSkillRef[]];
  /** An auto-refresh or rejoin failed (logged too). */
  refresh_error: [computer: string | null, error: unknown];
  /** Our socket dropped; socket.io reconnects by itself. */
  disconnected: [reason: string];
  /** Reconnected and back in the office. */
  reconnected: [];
  /** The client stopped for good (4008 / 401 on a reconnect, or `close()`). */
  closed: [error: Error];
}

/** Options of one request. */
export interface RequestOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

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

interface Pending {
  reject: (err: Error) => void;
}

/** The spec's local timeout result (digest §1.8). */
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

export class AgentClient extends EventEmitter<AgentClientEvents> implements ChunkFetcher {
  readonly url: string;
  name: string;
  private readonly opts: AgentClientOptions;
  private socket: Socket | undefined;
  private readonly reqPrefix = randomBytes(6).toString("base64url");
  private reqCounter = 0;
  private readonly pending = new Map<number, Pending>();
  private pendingSeq = 0;
  private office: string | undefined;
  private joined = false;
  private readonly present = new Set<string>();
  private fatal: Error | undefined;
  private everConnected = false;

  constructor(opts: AgentClientOptions) {
    super();
    this.opts = opts;
    this.url = opts.url.replace(/\/+$/, "");
    this.name = opts.name ?? `agent-${randomBytes(4).toString("hex")}`;
  }

  /** Local ack wait for `client:get_*` / `server:*`. */
  get requestTimeoutMs(): number {
    return Math.max(1, this.opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  }

  /** True while the socket is connected. */
  get connected(): boolean {
    return this.socket?.connected ?? false;
  }

  /** The office joined (kept across reconnects), if any. */
  get officeId(): string | undefined {
    return this.office;
  }

  /** Computers currently known to be in the office. */
  get computers(): string[] {
    return [...this.present];
  }

  /** A fresh, never reused request id: random per client + counter. */
  nextReqId(): string {
    this.reqCounter++;
    return `${this.reqPrefix}-${this.reqCounter}`;
  }

  /**
   * Connects. Rejects with `ProtocolVersionError` (4008), `AuthError` (401), another
   * `ProtocolError` for a flat answer, or `ConnectError` (server unreachable); in every case the
   * socket is disconnected first and no reconnect is attempted.
   */
  async connect(): Promise<void> {
    if (this.socket) throw new Error("connect() called twice");
    const socket = io(`${this.url}${NAMESPACE}`, {
      path: this.opts.path ?? DEFAULT_ENGINE_PATH,
      query: { [VERSION_QUERY_PARAM]: PROTOCOL_VERSION },
      auth: this.opts.token !== undefined ? { token: this.opts.token } : {},
      transports: ["polling", "websocket"],
      reconnection: true,
      reconnectionDelay: this.opts.reconnectionDelayMs ?? 500,
      reconnectionDelayMax: this.opts.reconnectionDelayMaxMs ?? 5000,
      timeout: this.opts.connectTimeoutMs ?? 20_000,
      autoConnect: false,
      forceNew: true,
    });
    this.socket = socket;
    this.wireNotifications(socket);

    await new Promise<void>((resolve, reject) => {
      const onConnect = (): void => {
        socket.off("connect_error", onError);
        resolve();
      };
      const onError = (err: Error): void => {
        socket.off("connect", onConnect);
        // "MUST call disconnect() explicitly before surfacing the error" (digest §1.4).
        socket.disconnect();
        this.socket = undefined;
        reject(classifyConnectError(err));
      };
      socket.once("connect", onConnect);
      socket.once("connect_error", onError);
      socket.connect();
    });
    this.everConnected = true;

    socket.on("connect", () => void this.onReconnect());
    socket.on("disconnect", (reason) => {
      this.joined = false;
      this.failPending(new DisconnectedError(`disconnected: ${reason}`));
      this.emit("disconnected", reason);
    });
    socket.on("connect_error", (err) => {
      const e = classifyConnectError(err);
      if (e instanceof ProtocolVersionError || e instanceof AuthError) {
        // A Server that now refuses us will keep refusing: stop the reconnect loop.
        this.fatal = e;
        socket.disconnect();
        this.emit("closed", e);
      }
    });
  }

  /** Disconnects for good; pending requests reject with `DisconnectedError`. */
  async close(): Promise<void> {
    const s = this.socket;
    if (!s) return;
    this.fatal ??= new DisconnectedError("client closed");
    s.disconnect();
    this.failPending(new DisconnectedError("client closed"));
    this.socket = undefined;
    this.emit("closed", this.fatal);
  }

  private failPending(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  /**
   * Emits `event` with an ack and waits for it, bounded by a local timer; rejects at once with
   * `DisconnectedError` when not connected or when the socket drops meanwhile.
   */
  private emitWithAck(
    event: string,
    payload: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown[]> {
    return new Promise<unknown[]>((resolve, reject) => {
      const socket = this.socket;
      if (!socket?.connected) return reject(new DisconnectedError());
      if (signal?.aborted) return reject(abortError(signal));
      const id = ++this.pendingSeq;
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.pending.delete(id);
      };
      const onAbort = (): void => {
        cleanup();
        reject(abortError(signal!));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new RequestTimeoutError(event, timeoutMs));
      }, timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        reject: (err) => {
          cleanup();
          reject(err);
        },
      });
      socket.emit(event, payload, (...args: unknown[]) => {
        if (!this.pending.has(id)) return; // timed out / aborted / disconnected meanwhile
        cleanup();
        resolve(args);
      });
    });
  }

  /** One routed `client:*` request: flat errors thrown typed, answers validated. */
  private async clientRequest<T>(
    event: string,
    computer: string,
    body: Record<string, unknown>,
    schema: z.ZodType<T>,
    opts: RequestOptions = {},
  ): Promise<T> {
    const payload = { agent: this.name, req_id: this.nextReqId(), computer, ...body };
    const [answer] = await this.emitWithAck(
      event,
      payload,
      opts.timeoutMs ?? this.requestTimeoutMs,
      opts.signal,
    );
    return this.parseAnswer(event, answer, schema);
  }

  private parseAnswer<T>(event: string, answer: unknown, schema: z.ZodType<T>): T {
    if (isErrorPayload(answer)) throw protocolErrorFromWire(answer);
    const parsed = schema.safeParse(answer);
    if (!parsed.success) {
      throw new InvalidResponseError(`${event}: answer does not match the protocol schema`);
    }
    return parsed.data;
  }

  // ---------------------------------------------------------------------------------------------
  // Office

  /** Joins `officeId` as the Agent; `(false, reason)` is a `JoinOfficeError`. */
  async joinOffice(officeId: string, name?: string): Promise<void> {
    if (name !== undefined) this.name = name;
    await this.sendJoin(officeId);
    this.office = officeId;
    this.joined = true;
    await this.refreshComputers();
  }

  private async sendJoin(officeId: string): Promise<void> {
    const [ok, reason] = await this.emitWithAck(
      Events.JoinOffice,
      { role: "agent", name: this.name, office_id: officeId },
      this.requestTimeoutMs,
    );
    if (ok !== true) {
      throw new JoinOfficeError(typeof reason === "string" && reason ? reason : "refused");
    }
  }

  /** Leaves the office (and stops tracking its Computers). */
  async leaveOffice(): Promise<void> {
    const office = this.office;
    if (!office) return;
    this.office = undefined;
    this.joined = false;
    this.present.clear();
    await this.emitWithAck(Events.LeaveOffice, { office_id: office }, this.requestTimeoutMs);
  }

  /** `server:list_room`: the sessions of our office. */
  async listRoom(opts: RequestOptions = {}): Promise<SessionInfo[]> {
    const office = this.requireOffice();
    const [answer] = await this.emitWithAck(
      Events.ListRoom,
      { agent: this.name, req_id: this.nextReqId(), office_id: office },
      opts.timeoutMs ?? this.requestTimeoutMs,
      opts.signal,
    );
    return this.parseAnswer(Events.ListRoom, answer, ListRoomRetSchema).sessions;
  }

  /** Re-reads the office from the Server and emits joined/left for every difference. */
  async refreshComputers(opts: RequestOptions = {}): Promise<string[]> {
    const office = this.requireOffice();
    const sessions = await this.listRoom(opts);
    if (this.office !== office) return this.computers;
    const now = new Set(
      sessions.filter((s) => s.role === "computer" && s.office_id === office).map((s) => s.name),
    );
    for (const c of [...this.present]) {
      if (!now.has(c)) {
        this.present.delete(c);
        this.emit("computer_left", c);
      }
    }
    for (const c of now) {
      if (!this.present.has(c)) {
        this.present.add(c);
        this.computerEntered(c);
      }
    }
    return this.computers;
  }

  private requireOffice(): string {
    if (!this.office) throw new Error("join an office first (joinOffice)");
    return this.office;
  }

  private computerEntered(c: string): void {
    this.emit("computer_joined", c);
    if (this.opts.autoRefresh) this.autoTools(c);
  }

  private autoTools(c: string): void {
    this.getTools(c).then(
      (tools) => this.emit("tools", c, tools),
      (err: unknown) => this.refreshFailed(c, err),
    );
  }

  private refreshFailed(c: string | null, err: unknown): void {
    log.warn({ computer: c, err: String(err) }, "refresh failed");
    this.emit("refresh_error", c, err);
  }

  private wireNotifications(socket: Socket): void {
    const mine = (raw: unknown): string | undefined => {
      const n = EnterOfficeNotificationSchema.safeParse(raw);
      if (!n.success || n.data.office_id !== this.office) return undefined;
      return n.data.computer ?? undefined;
    };
    socket.on(Events.EnterOfficeNotify, (raw: unknown) => {
      const c = mine(raw);
      if (c === undefined) return;
      this.present.add(c);
      this.computerEntered(c);
    });
    socket.on(Events.LeaveOfficeNotify, (raw: unknown) => {
      const c = mine(raw);
      if (c === undefined) return;
      this.present.delete(c);
      this.emit("computer_left", c);
    });
    const update = (
      event: string,
      emit: "skills_updated" | "tools_updated" | "config_updated" | "desktop_updated",
    ): void => {
      socket.on(event, (raw: unknown) => {
        const n = UpdateComputerConfigReqSchema.safeParse(raw);
        if (!n.success || !this.office) return;
        const c = n.data.computer;
        this.emit(emit, c);
        if (!this.opts.autoRefresh) return;
        if (emit === "skills_updated") {
          this.getSkills(c).then(
            (skills) => this.emit("skills", c, skills),
            (err: unknown) => this.refreshFailed(c, err),
          );
        } else if (emit === "tools_updated") {
          this.autoTools(c);
        }
      });
    };
    update(Events.UpdateSkillsNotify, "skills_updated");
    update(Events.UpdateToolListNotify, "tools_updated");
    update(Events.UpdateConfigNotify, "config_updated");
    update(Events.UpdateDesktopNotify, "desktop_updated");
  }

  /** After socket.io reconnected: rejoin the office, re-read its Computers. */
  private async onReconnect(): Promise<void> {
    if (!this.everConnected) return;
    const office = this.office;
    if (!office) {
      this.emit("reconnected");
      return;
    }
    // The Server may not have noticed our old session's end yet ("Room already has an agent"):
    // retry the join a few times with a backoff while this connection lasts.
    const socket = this.socket;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.sendJoin(office);
        if (this.office !== office) return;
        this.joined = true;
        await this.refreshComputers();
        this.emit("reconnected");
        return;
      } catch (err) {
        const retry =
          err instanceof JoinOfficeError && attempt < REJOIN_ATTEMPTS && socket?.connected;
        if (!retry) {
          this.refreshFailed(null, err);
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 5000)));
        if (this.socket !== socket || !socket.connected || this.office !== office) return;
      }
    }
  }

  /**
   * Resolves once we are connected and joined and `computer` is in the office. Asks the Server
   * first (a stale local view must not say "present" for a Computer that just dropped).
   */
  async waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<void> {
    const { signal } = opts;
    if (this.fatal) throw this.fatal;
    if (this.joined) {
      try {
        await this.refreshComputers(signal ? { signal } : {});
      } catch (err) {
        if (!(err instanceof DisconnectedError || err instanceof RequestTimeoutError)) throw err;
      }
    }
    if (this.joined && this.present.has(computer)) return;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (this.joined && this.present.has(computer)) done();
      };
      const onClosed = (err: unknown): void =>
        done(err === undefined ? new DisconnectedError("client closed") : asError(err));
      const onAbort = (): void => done(abortError(signal!));
      const timer =
        opts.timeoutMs !== undefined
          ? setTimeout(
              () =>
                done(
                  new RequestTimeoutError(`waiting for Computer '${computer}'`, opts.timeoutMs!),
                ),
              opts.timeoutMs,
            )
          : undefined;
      const done = (err?: Error): void => {
        clearTimeout(timer);
        this.off("computer_joined", check);
        this.off("reconnected", check);
        this.off("closed", onClosed);
        signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) reject(err);
        else resolve();
      };
      this.on("computer_joined", check);
      this.on("reconnected", check);
      this.on("closed", onClosed);
      signal?.addEventListener("abort", onAbort, { once: true });
      check();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  /** `client:get_tools`. */
  async getTools(computer: string, opts: RequestOptions = {}): Promise<SMCPTool[]> {
    return (await this.clientRequest(Events.GetTools, computer, {}, GetToolsRetSchema, opts)).tools;
  }

  /** `client:get_skills`. */
  async getSkills(computer: string, opts: RequestOptions = {}): Promise<A2CSkillRef[]> {
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

  /** One raw `client:get_blob` (validated; a flat error is thrown typed). */
  async getBlobChunk(computer: string, handle: string, req: ChunkRequest): Promise<GetBlobRet> {
    const body: Record<string, unknown> = { blob_handle: handle, chunk_offset: req.offset };
    if (req.maxChunkBytes > 0) body.max_chunk_bytes = req.maxChunkBytes;
    if (req.binary) body.blob_format = "binary";
    const opts: RequestOptions = {};
    if (req.timeoutMs !== undefined) opts.timeoutMs = req.timeoutMs;
    if (req.signal) opts.signal = req.signal;
    return this.clientRequest(Events.GetBlob, computer, body, GetBlobRetSchema, opts);
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
   * cancelled and the spec's local timeout result returned (digest §1.8). Sidebanded items are
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

/** Consumers "SHOULD accept both spellings at result level, preferring `meta`" (digest §3.2). */
export function normalizeResultMeta(result: CallToolResult): CallToolResult {
  const raw = result as CallToolResult & { _meta?: unknown };
  if (result.meta === undefined && raw._meta && typeof raw._meta === "object") {
    return { ...result, meta: raw._meta as CallToolResult["meta"] };
  }
  return result;
}
