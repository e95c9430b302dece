/**
 * `startServer(options)`: the A2C relay on its own HTTP server. The HTTP layer is ours: every
 * request and upgrade under the engine path passes the version gate (gate.ts) before it is handed
 * to engine.io, so no socket.io code runs for a refused client (D1). `/healthz` and `/metrics`
 * need no `a2c_version`. socket.io serves the `/smcp` namespace only. Every departure from stock
 * socket.io / engine.io / ws is the transport's (transport/).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { Server as EngineServer } from "engine.io";
import { Server as SocketServer, type ServerOptions as SocketServerOptions } from "socket.io";
import {
  DEFAULT_ENGINE_PATH,
  DEFAULT_MAX_HTTP_BUFFER_SIZE,
  NAMESPACE,
  PROTOCOL_VERSION,
  parseVersion,
  type SemVer,
} from "@a2c-smcp/protocol";
import { NoAuthProvider, TokenAuthProvider, type AuthProvider, type TokenGrant } from "./auth.ts";
import type { SmcpNamespace } from "./connection.ts";
import { gateRequest, writeRefusal, writeUpgradeRefusal } from "./gate.ts";
import {
  ConnectionLimiter,
  LimitMetrics,
  opensSession,
  writeLimitRefusal,
  writeUpgradeLimitRefusal,
} from "./limits.ts";
import { createLogger, type Logger } from "./log.ts";
import { Membership } from "./membership.ts";
import { sendMetrics, startMetricsListener, type MetricsListenOptions } from "./metrics-http.ts";
import { ServerMetrics } from "./metrics.ts";
import { MemoryOfficeRegistry, type OfficeRegistry } from "./offices.ts";
import { localLink, Relay, type ComputerLink } from "./relay.ts";
import { Notifier } from "./notify.ts";
import type { RedisClusterOptions } from "./redis/cluster.ts";
import {
  SessionGuard,
  attachSmcp,
  refuseOtherNamespaces,
  type GuardedSession,
} from "./namespace.ts";
import { OUTBOUND_DEFAULTS, OutboundGuard } from "./outbound.ts";
import {
  createServerTransport,
  registerFastPathGauge,
  type FastPathReport,
  type MeteredSession,
  type TransportOption,
} from "./transport/index.ts";

export interface ServerOptions {
  /** Interface to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port; `0` picks a free one (read it back from `port`). Default 7100. */
  port?: number;
  /** Engine.IO mount path. Default `/socket.io/`. */
  path?: string;
  /** Largest message a client may send (engine.io `maxHttpBufferSize`). Default 1,000,000. */
  maxHttpBufferSize?: number;
  /** Relay timeout of `client:get_*` in ms (D10). Default 30,000. */
  relayTimeoutMs?: number;
  /** Added to a tool call's `timeout` seconds (D10). Default 5,000 ms. */
  toolCallGraceMs?: number;
  /** Requests in flight per Agent socket before `busy` answers. Default 256. */
  maxInflightPerAgent?: number;
  /** engine.io heartbeat. Defaults 25,000 / 60,000 ms (generous: big transfers delay pongs). */
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
  /** The protocol version this Server declares. Default PROTOCOL_VERSION. */
  protocolVersion?: string;
  /** Accepted bearer tokens (D4). */
  tokens?: readonly (string | TokenGrant)[];
  /** Admit everyone (development only; logged loudly). */
  noAuth?: boolean;
  /** A custom auth provider; wins over `tokens` / `noAuth`. */
  auth?: AuthProvider;
  /** Office membership store. Default: in-memory. */
  registry?: OfficeRegistry;
  /**
   * Several Server nodes on one Redis (server/redis/README.md): offices in Redis, socket.io's
   * Redis adapter, client:* routed across nodes. Overridden piecewise by `registry` / `adapter` /
   * `link`.
   */
  redis?: Omit<RedisClusterOptions, "relayTimeoutMs" | "toolCallGraceMs" | "logger">;
  /** socket.io adapter (multi-node deployments). Default: in-memory. */
  adapter?: SocketServerOptions["adapter"];
  /** Reaches Computer sockets for the relay. Default: the local socket of that id. */
  link?: (nsp: SmcpNamespace) => ComputerLink;
  logger?: Logger;
  /** Also export process metrics (CPU, memory, event loop) on /metrics. Default false. */
  processMetrics?: boolean;
  /**
   * Serve `/metrics` on a listener of its own instead of the client port (metrics-http.ts).
   * Default: on the client port.
   */
  metricsListen?: MetricsListenOptions;
  /**
   * Engine.IO sessions (open or opening) per remote address; more get HTTP 429 before engine.io
   * (limits.ts). 0 = no limit, the default here: embedding code and loopback tests choose; the
   * `npm run server` CLI defaults to 100 (docs/configuration.md, "Per-client limits").
   */
  maxConnectionsPerIp?: number;
  /**
   * Loopback peers (127.0.0.0/8, ::1) are exempt from `maxConnectionsPerIp`: they are this host
   * (tests, the stack, a same-host reverse proxy carrying every client). Default true.
   */
  exemptLoopback?: boolean;
  /** Incoming events a second per socket (token bucket); over it: flat `busy`. 0 = off (default). */
  maxEventsPerSecond?: number;
  /** Events a quiet socket may send at once. Default `maxEventsPerSecond` (one second's worth). */
  eventsBurst?: number;
  /**
   * Bytes queued for one client (engine.io's write buffer and its transport's) plus the bytes
   * reserved for answers in flight to it; a request that would go over is answered `busy`
   * (outbound.ts). Default 64 MiB; 0 = no bound.
   */
  maxQueuedBytes?: number;
  /** The same across every connection of this Server. Default 512 MiB; 0 = no bound. */
  maxQueuedBytesTotal?: number;
  /**
   * Bytes queued for one client, and reserved for its chunks, beyond what it took in the last
   * second; a chunk request that would go over is answered `busy` (outbound.ts). A reading
   * client earns room as it reads; one that stops reading is held to this much. Default 8 MiB;
   * 0 = off (only `maxQueuedBytes`).
   */
  maxUnreadBytes?: number;
  /**
   * A connection with bytes queued that moves none of them, or stays over `maxQueuedBytes`, for
   * this long is dropped (logged, `a2c_disconnects_total`). Default 30,000 ms; 0 = never.
   */
  outboundStallMs?: number;
  /**
   * Departures from stock socket.io / engine.io / ws (server/transport/): `"fast"` (default) turns
   * on every fast path the installed libraries support, `"stock"` runs them as shipped, `{ off }`
   * the default without the named ones. What took effect: `fastPaths` below.
   */
  transport?: TransportOption;
}

export interface RunningServer {
  /** `http://host:port` (clients connect to `${url}/smcp`). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Engine.IO path, normalized with a trailing slash. */
  readonly path: string;
  readonly maxHttpBufferSize: number;
  readonly registry: OfficeRegistry;
  readonly metrics: ServerMetrics;
  /** Where `/metrics` is served (the client port unless `metricsListen` moved it). */
  readonly metricsUrl: string;
  /** socket.io server (for adapters and diagnostics; the relay does not need it from outside). */
  readonly io: SocketServer;
  /** Requests forwarded to a Computer and not answered yet. */
  inflight(): number;
  /** What the Server holds for each client (bytes queued, reserved for answers; outbound.ts). */
  readonly outbound: OutboundGuard;
  /** Each transport fast path: `on`, `off` (by option) or `unavailable: <reason>`. */
  readonly fastPaths: FastPathReport;
  /** Leaves every office (others are told), drops in-flight requests, closes every socket. */
  close(): Promise<void>;
}

const DEFAULTS = {
  host: "127.0.0.1",
  port: 7100,
  relayTimeoutMs: 30_000,
  toolCallGraceMs: 5_000,
  maxInflightPerAgent: 256,
  pingIntervalMs: 25_000,
  pingTimeoutMs: 60_000,
} as const;

/** Ensures `/x/` form, as engine.io matches it. */
export function normalizeEnginePath(path: string): string {
  let p = path.startsWith("/") ? path : `/${path}`;
  if (!p.endsWith("/")) p += "/";
  return p;
}

function resolveAuth(opts: ServerOptions, logger: Logger): AuthProvider {
  if (opts.auth) return opts.auth;
  if (opts.noAuth) {
    logger.warn(
      "AUTHENTICATION DISABLED (--no-auth): every client may join every office. Development only.",
    );
    return new NoAuthProvider();
  }
  const grants = (opts.tokens ?? []).map((t) => (typeof t === "string" ? { token: t } : t));
  if (grants.length === 0) {
    throw new Error("no tokens configured: pass tokens (--token / --tokens-file) or noAuth");
  }
  return new TokenAuthProvider(grants);
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger();
  const host = options.host ?? DEFAULTS.host;
  const enginePath = normalizeEnginePath(options.path ?? DEFAULT_ENGINE_PATH);
  const maxHttpBufferSize = options.maxHttpBufferSize ?? DEFAULT_MAX_HTTP_BUFFER_SIZE;
  const versionText = options.protocolVersion ?? PROTOCOL_VERSION;
  const serverVersion: SemVer | null = parseVersion(versionText);
  if (!serverVersion) throw new Error(`invalid protocol version: ${versionText}`);
  const provider = resolveAuth(options, logger);
  const relayTimeoutMs = options.relayTimeoutMs ?? DEFAULTS.relayTimeoutMs;
  const toolCallGraceMs = options.toolCallGraceMs ?? DEFAULTS.toolCallGraceMs;
  // Loaded only for a node that joins others (D119): the Redis client is most of the
  // modules a Server would load (about 0.35 s of CPU at every start of a node that never uses it).
  const cluster = options.redis
    ? await (
        await import("./redis/cluster.ts")
      ).connectRedisCluster({ ...options.redis, relayTimeoutMs, toolCallGraceMs, logger })
    : null;
  const registry = options.registry ?? cluster?.registry ?? new MemoryOfficeRegistry();
  const adapter = options.adapter ?? cluster?.adapter;

  const transport = createServerTransport(options.transport);
  const engine = new EngineServer({
    pingInterval: options.pingIntervalMs ?? DEFAULTS.pingIntervalMs,
    pingTimeout: options.pingTimeoutMs ?? DEFAULTS.pingTimeoutMs,
    maxHttpBufferSize,
    transports: ["polling", "websocket"],
    perMessageDeflate: false,
    httpCompression: false,
  });
  const io = new SocketServer({
    serveClient: false,
    ...(adapter ? { adapter } : {}),
    ...transport.ioOptions,
  });
  io.bind(engine);
  const nsp = io.of(NAMESPACE) as unknown as SmcpNamespace;
  refuseOtherNamespaces(io);
  transport.attach(engine, nsp);

  const metrics: ServerMetrics = new ServerMetrics(
    {
      connections: () => {
        const by = { agent: 0, computer: 0, none: 0 };
        for (const s of nsp.sockets.values()) by[s.data.member?.role ?? "none"] += 1;
        return by;
      },
      counts: () => registry.counts(),
      inflight: (): number => relay.inflight.size,
    },
    options.processMetrics ?? false,
  );
  registerFastPathGauge(metrics.registry, transport.report);
  // Per-client limits (docs/configuration.md, "Per-client limits"): one refusal counter.
  const limitMetrics: LimitMetrics = new LimitMetrics(metrics.registry, () => connLimit.busiest());
  const outbound = new OutboundGuard(
    {
      maxQueuedBytes: options.maxQueuedBytes ?? OUTBOUND_DEFAULTS.maxQueuedBytes,
      maxQueuedBytesTotal: options.maxQueuedBytesTotal ?? OUTBOUND_DEFAULTS.maxQueuedBytesTotal,
      maxUnreadBytes: options.maxUnreadBytes ?? OUTBOUND_DEFAULTS.maxUnreadBytes,
      stallMs: options.outboundStallMs ?? OUTBOUND_DEFAULTS.stallMs,
    },
    metrics.registry,
    limitMetrics,
    logger,
    transport.meter,
  );
  const link = options.link?.(nsp) ?? cluster?.link(nsp) ?? localLink(nsp);
  const relay: Relay = new Relay({
    registry,
    link,
    metrics,
    logger,
    relayTimeoutMs,
    toolCallGraceMs,
    maxInflightPerAgent: options.maxInflightPerAgent ?? DEFAULTS.maxInflightPerAgent,
    outbound,
    limitMetrics,
    maxHttpBufferSize,
    carried: transport.carried,
    targetAccount: (sid) => {
      const socket = nsp.sockets.get(sid);
      // A sid this node does not hold is another node's Computer (cluster.ts), or one that just
      // left (then nothing is sent and the reservation is given back at once).
      return socket ? outbound.accountOf(socket.conn) : outbound.remoteUploadTarget(sid);
    },
  });
  const eventRate = options.maxEventsPerSecond ?? 0;
  const exemptLoopback = options.exemptLoopback ?? true;
  const sessions = new SessionGuard(
    {
      maxEventsPerSecond: eventRate,
      eventsBurst: options.eventsBurst ?? eventRate,
      exemptLoopback,
      dropUnsolicitedPong: (session) => {
        const account = outbound.accountOf(session);
        if (account) outbound.drop(account, "unsolicited_pong");
      },
    },
    limitMetrics,
    metrics.refusals,
    logger,
  );
  const membership = new Membership({ nsp, registry, logger, refusals: metrics.refusals });
  const notifier = new Notifier({ nsp, logger });
  attachSmcp({
    nsp,
    provider,
    relay,
    membership,
    notifier,
    metrics,
    logger,
    serverVersion,
    versionText,
    outbound,
    sessions,
  });

  // Sessions per address: after the version gate and before engine.io.
  const connLimit = new ConnectionLimiter(
    options.maxConnectionsPerIp ?? 0,
    exemptLoopback,
    limitMetrics,
    logger,
  );
  engine.on("connection", (session: EngineSession) => {
    connLimit.opened(session.request, session);
    outbound.watch(session);
    sessions.watch(session);
  });
  nsp.on("connection", (socket) => sessions.attach(socket));

  const startedAt = Date.now();
  const http = createServer((req, res) => {
    if (isEnginePath(req, enginePath)) {
      const decision = gateRequest(req, serverVersion, versionText);
      if (!decision.ok) {
        metrics.gateRefusals.inc({ code: String(decision.body.code) });
        return writeRefusal(res, decision);
      }
      const refusal = opensSession(req) ? connLimit.admit(req, res) : null;
      if (refusal) return writeLimitRefusal(res, refusal);
      return engine.handleRequest(req, res);
    }
    void serveHttp(req, res).catch((err: unknown) => {
      logger.error({ err }, "http route failed");
      if (!res.headersSent) sendJson(res, 500, { code: 500, message: "Internal error" });
    });
  });
  http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!isEnginePath(req, enginePath)) {
      socket.on("error", () => socket.destroy());
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    const decision = gateRequest(req, serverVersion, versionText);
    if (!decision.ok) {
      metrics.gateRefusals.inc({ code: String(decision.body.code) });
      return writeUpgradeRefusal(socket, decision);
    }
    const refusal = opensSession(req) ? connLimit.admit(req, socket) : null;
    if (refusal) return writeUpgradeLimitRefusal(socket, refusal);
    engine.handleUpgrade(req, socket, head);
  });

  async function serveHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = (req.url ?? "/").split("?")[0];
    const readOnly = req.method === "GET" || req.method === "HEAD";
    if (pathname === "/healthz" && readOnly) {
      const counts = await registry.counts();
      return sendJson(res, 200, {
        status: "ok",
        protocol_version: versionText,
        uptime_s: Math.round((Date.now() - startedAt) / 1000),
        connections: nsp.sockets.size,
        offices: counts.offices,
        inflight: relay.inflight.size,
        outbound_queued_bytes: outbound.queuedTotal,
        fast_paths: transport.report,
      });
    }
    if (pathname === "/metrics" && readOnly && !options.metricsListen) {
      return sendMetrics(res, metrics.registry);
    }
    sendJson(res, 404, { code: 404, message: "Not found" });
  }

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? DEFAULTS.port, host, () => {
      http.off("error", reject);
      resolve();
    });
  }).catch(async (err: unknown) => {
    await cluster?.close(); // its heartbeat and Redis connections would keep the process up
    throw err;
  });
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  const metricsListener = options.metricsListen
    ? await startMetricsListener(options.metricsListen, metrics.registry, (err) =>
        logger.error({ err }, "metrics route failed"),
      ).catch(async (err: unknown) => {
        http.close();
        await cluster?.close();
        throw err;
      })
    : null;
  const metricsUrl = metricsListener?.url ?? `http://${urlHost}:${port}/metrics`;
  logger.info(
    {
      host,
      port,
      path: enginePath,
      namespace: NAMESPACE,
      auth: provider.name,
      maxHttpBufferSize,
      maxConnectionsPerIp: connLimit.max,
      maxEventsPerSecond: eventRate,
      outbound: outbound.options,
      metrics: metricsUrl,
      fastPaths: transport.report,
    },
    "server listening",
  );

  let closing: Promise<void> | null = null;
  async function close(): Promise<void> {
    const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
    // Leave every office first (the others are told, a shared registry is cleaned), then drop
    // what is in flight, then close the sockets and the remaining HTTP connections.
    await Promise.all([...nsp.sockets.values()].map((s) => membership.disconnect(s)));
    relay.close();
    outbound.close();
    sessions.close();
    await io.close();
    membership.close();
    http.closeAllConnections();
    await stopped;
    await metricsListener?.close();
    await cluster?.close();
    logger.info("server closed");
  }

  return {
    url: `http://${urlHost}:${port}`,
    host,
    port,
    path: enginePath,
    maxHttpBufferSize,
    registry,
    metrics,
    metricsUrl,
    io,
    inflight: () => relay.inflight.size,
    outbound,
    fastPaths: transport.report,
    close: () => (closing ??= close()),
  };
}

/** The part of an engine.io session the limiter and outbound.ts follow. */
type EngineSession = MeteredSession &
  GuardedSession & {
    readonly request: IncomingMessage;
    once(event: "close", fn: () => void): unknown;
  };

function isEnginePath(req: IncomingMessage, enginePath: string): boolean {
  return (req.url ?? "").startsWith(enginePath);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}
