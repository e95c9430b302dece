/**
 * The socket layer of `AgentClient` (docs/protocol.md, "Connection"), kept apart from office tracking and the
 * request methods so the connection rules can be read on their own:
 *
 * - Connects to `${url}/smcp` with `a2c_version` = PROTOCOL_VERSION (never user input), polling
 *   first ("SDK MUST NOT default to WebSocket-only"), the token in `auth` and never `role`.
 * - A 4008 handshake is parsed from the HTTP 400 body into a `ProtocolVersionError`, after
 *   `disconnect()` ("MUST call disconnect() explicitly before surfacing the error"), no retry.
 * - A WebSocket closed with 4900 is never reconnected; one polling-only handshake fetches the
 *   4008 body, else the error carries code 4900 and empty versions.
 * - Every request gets a fresh, never reused `req_id`; `client:get_*` wait ≥ 30 s by default;
 *   a flat ErrorPayload becomes a typed `ProtocolError` subclass; our own disconnect is learned
 *   from socket.io's `disconnect` event, never from an ack timeout.
 * - Requests travel through the wire (`RequestWire`, agent/transport.ts): `req_id`s, the emit,
 *   and the acks waited for with their deadlines and abort signals.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { io, type Socket } from "socket.io-client";
import {
  DEFAULT_ENGINE_PATH,
  NAMESPACE,
  PROTOCOL_VERSION,
  VERSION_QUERY_PARAM,
  isErrorPayload,
  type A2CSkillRef,
  type SMCPTool,
} from "@a2c-smcp/protocol";
import {
  checkServerUrl,
  classifyConnectError,
  isVersionClose,
  versionClose4900,
  type ConnectTarget,
} from "./connect-error.ts";
import {
  DisconnectedError,
  InvalidResponseError,
  ProtocolVersionError,
  AuthError,
  protocolErrorFromWire,
} from "./errors.ts";
import { silentLogger, type AgentLogger } from "./logger.ts";
import {
  RequestWire,
  decideFastPaths,
  socketOptions,
  type AgentFastPaths,
  type AgentTransport,
} from "./transport.ts";
import type { z } from "zod";

/** Default local ack wait for `client:get_*` and `server:*` (the spec: at least 30 s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

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
   * Fetch `client:get_tools` when a Computer enters and on `notify:update_tool_list`,
   * `client:get_skills` on `notify:update_skills`, and emit `tools` / `skills`. Default false.
   */
  autoRefresh?: boolean;
  /** socket.io reconnection delays. */
  reconnectionDelayMs?: number;
  reconnectionDelayMaxMs?: number;
  /** Handshake timeout. Default 20 s. */
  connectTimeoutMs?: number;
  /**
   * Move from HTTP long-polling to WebSocket after the handshake. Default true; false stays on
   * polling (behind a proxy that does not pass WebSocket upgrades).
   */
  upgrade?: boolean;
  /** Where the SDK's warnings go (any pino logger fits). Default: nowhere. */
  logger?: AgentLogger;
  /**
   * The queue delay, in ms above the path's base round trip, that this client's pulls from one
   * Computer may add together (agent/path.ts; D40). Default 100: about what a small request to
   * that Computer waits behind a pull. Lower keeps requests snappier on slow links; higher
   * tolerates more jitter.
   */
  targetDelayMs?: number;
  /**
   * A rate cap, bytes a second, that every pull of this client shares (the blob's bytes as they
   * travel; agent/rate-limit.ts). Default: none. A pull's own `maxRate` may cap it further.
   */
  maxRate?: number;
  /**
   * `"fast"` (default): the transport's fast paths the installed socket.io-parser supports
   * (agent/transport.ts); `"stock"`: socket.io-client as shipped.
   */
  transport?: AgentTransport;
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
  /** Runs on the raw ack arguments inside socket.io's callback, before any promise sees them. */
  onAck?: (args: unknown[]) => void;
}

/**
 * Connection, `req_id`s and ack plumbing. Abstract: the office layer supplies the notification
 * handlers and what to do after a reconnect.
 */
export abstract class ClientConnection extends EventEmitter<AgentClientEvents> {
  readonly url: string;
  name: string;
  /** `opts.logger`, or the silent default; pulls through this client log here too. */
  readonly logger: AgentLogger;
  /** What each transport fast path is doing (`on`, `off`, `unavailable: <reason>`). */
  readonly fastPaths: AgentFastPaths;
  protected readonly opts: AgentClientOptions;
  /** How requests travel on the socket: `req_id`s, the emit and the ack waited for. */
  protected readonly wire: RequestWire;
  /** In the office right now; set by the office layer, cleared here when the socket drops. */
  protected joined = false;
  protected fatal: Error | undefined;
  protected everConnected = false;

  constructor(opts: AgentClientOptions) {
    super();
    // Every pull that waits for a Computer to come back listens here; many parallel pulls on one
    // client are normal, not a leak.
    this.setMaxListeners(0);
    this.opts = opts;
    this.logger = opts.logger ?? silentLogger;
    this.url = opts.url.replace(/\/+$/, "");
    this.name = opts.name ?? `agent-${randomBytes(4).toString("hex")}`;
    this.fastPaths = decideFastPaths(opts.transport);
    this.wire = new RequestWire(Math.max(1, opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS));
  }

  /** The socket (the wire's: requests are emitted on it). */
  protected get socket(): Socket | undefined {
    return this.wire.socket;
  }
  protected set socket(socket: Socket | undefined) {
    this.wire.socket = socket;
  }

  /** Local ack wait for `client:get_*` / `server:*`. */
  get requestTimeoutMs(): number {
    return this.wire.requestTimeoutMs;
  }

  /** True while the socket is connected. */
  get connected(): boolean {
    return this.socket?.connected ?? false;
  }

  /** A fresh, never reused request id: random per client + counter. */
  nextReqId(): string {
    return this.wire.nextReqId();
  }

  /**
   * Connects. Rejects with `ProtocolVersionError` (4008), `AuthError` (401), another
   * `ProtocolError` for a flat answer, or `ConnectError` (not a URL, server unreachable: its
   * `reason` says why); in every case the socket is disconnected first and no reconnect is
   * attempted.
   */
  async connect(): Promise<void> {
    if (this.socket) throw new Error("connect() called twice");
    const badUrl = checkServerUrl(this.url);
    if (badUrl) throw badUrl;
    const socket = io(`${this.url}${NAMESPACE}`, {
      ...this.handshakeOptions(),
      transports: ["polling", "websocket"],
      upgrade: this.opts.upgrade ?? true,
      reconnection: true,
      reconnectionDelay: this.opts.reconnectionDelayMs ?? 500,
      reconnectionDelayMax: this.opts.reconnectionDelayMaxMs ?? 5000,
      autoConnect: false,
      forceNew: true,
      ...socketOptions(this.fastPaths),
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
        // "MUST call disconnect() explicitly before surfacing the error".
        socket.disconnect();
        this.socket = undefined;
        const e = classifyConnectError(err, this.connectTarget());
        if (e instanceof ProtocolVersionError && e.code === 4900) {
          void this.versionBodyAfter4900().then(reject);
        } else reject(e);
      };
      socket.once("connect", onConnect);
      socket.once("connect_error", onError);
      socket.connect();
    });
    this.everConnected = true;

    socket.on("connect", () => void this.onReconnect());
    socket.on("disconnect", (reason, details) => {
      this.joined = false;
      // "On WS close 4900: MUST NOT auto-reconnect". A manual disconnect() from
      // inside this handler runs before the Manager schedules its reconnect, and cancels it.
      const versionClose = isVersionClose(details);
      if (versionClose) socket.disconnect();
      this.failPending(new DisconnectedError(`disconnected: ${reason}`));
      this.emit("disconnected", reason);
      if (versionClose) void this.stopAfter4900(socket);
    });
    socket.on("connect_error", (err) => {
      const e = classifyConnectError(err, this.connectTarget());
      if (e instanceof ProtocolVersionError || e instanceof AuthError) {
        // A Server that now refuses us will keep refusing: stop the reconnect loop.
        this.fatal = e;
        socket.disconnect();
        this.emit("closed", e);
      }
    });
  }

  private connectTarget(): ConnectTarget {
    return { url: this.url, timeoutMs: this.handshakeOptions().timeout };
  }

  /** What every handshake of this client sends: path, version, token. */
  private handshakeOptions(): {
    path: string;
    query: Record<string, string>;
    auth: Record<string, string>;
    timeout: number;
  } {
    return {
      path: this.opts.path ?? DEFAULT_ENGINE_PATH,
      query: { [VERSION_QUERY_PARAM]: PROTOCOL_VERSION },
      auth: this.opts.token !== undefined ? { token: this.opts.token } : {},
      timeout: this.opts.connectTimeoutMs ?? 20_000,
    };
  }

  /**
   * After a WebSocket close 4900: "SHOULD retry once polling-only to fetch the 4008 body; else
   * raise with code 4900 and empty version fields". Never rejects.
   */
  private async versionBodyAfter4900(): Promise<ProtocolVersionError> {
    const probe = io(`${this.url}${NAMESPACE}`, {
      ...this.handshakeOptions(),
      transports: ["polling"],
      reconnection: false,
      autoConnect: false,
      forceNew: true,
    });
    const found = await new Promise<ProtocolVersionError | undefined>((resolve) => {
      probe.once("connect", () => resolve(undefined));
      probe.once("connect_error", (err) => {
        const e = classifyConnectError(err, this.connectTarget());
        resolve(e instanceof ProtocolVersionError && e.code === 4008 ? e : undefined);
      });
      probe.connect();
    });
    probe.disconnect();
    return found ?? versionClose4900();
  }

  /** The socket was closed with 4900 and will not reconnect: fetch the reason, then stop. */
  private async stopAfter4900(socket: Socket): Promise<void> {
    const err = await this.versionBodyAfter4900();
    if (this.socket !== socket) return; // close() ran meanwhile
    this.fatal ??= err;
    this.socket = undefined;
    this.emit("closed", this.fatal);
  }

  /** Disconnects for good; pending requests reject with `DisconnectedError`. */
  async close(): Promise<void> {
    const s = this.socket;
    if (!s) return;
    this.fatal ??= new DisconnectedError("client closed");
    s.disconnect();
    this.failPending(new DisconnectedError("client closed"));
    this.wire.acks.close();
    this.socket = undefined;
    this.emit("closed", this.fatal);
  }

  private failPending(err: Error): void {
    this.wire.acks.failAll(err);
  }

  /**
   * Emits `event` with an ack and waits for it, bounded by a local deadline; rejects at once with
   * `DisconnectedError` when not connected or when the socket drops meanwhile.
   */
  protected emitWithAck(
    event: string,
    payload: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
    onAck?: (args: unknown[]) => void,
  ): Promise<unknown[]> {
    return this.wire.request(event, payload, timeoutMs, signal, (args) => {
      onAck?.(args);
      return args;
    });
  }

  /** One routed `client:*` request: flat errors thrown typed, answers validated. */
  protected clientRequest<T>(
    event: string,
    computer: string,
    body: Record<string, unknown>,
    schema: z.ZodType<T>,
    opts: RequestOptions = {},
  ): Promise<T> {
    const payload = { agent: this.name, req_id: this.nextReqId(), computer, ...body };
    const onAck = opts.onAck;
    return this.wire.request(
      event,
      payload,
      opts.timeoutMs ?? this.requestTimeoutMs,
      opts.signal,
      (args) => {
        onAck?.(args);
        return this.parseAnswer(event, args[0], schema);
      },
    );
  }

  protected parseAnswer<T>(event: string, answer: unknown, schema: z.ZodType<T>): T {
    if (isErrorPayload(answer)) throw protocolErrorFromWire(answer);
    const parsed = schema.safeParse(answer);
    if (!parsed.success) {
      throw new InvalidResponseError(`${event}: answer does not match the protocol schema`);
    }
    return parsed.data;
  }

  /** Subscribes the office's `notify:*` handlers on a new socket. */
  protected abstract wireNotifications(socket: Socket): void;

  /** After socket.io reconnected (every `connect` after the first). */
  protected abstract onReconnect(): Promise<void>;
}
