/**
 * The Computer's optional operator endpoint (`--http-port`): `GET /healthz` (JSON: connected to
 * the Server? joined its office? which fast paths are on?) and `GET /metrics` (its prom-client
 * registry, Prometheus text).
 * Off unless a port is given, and bound to loopback unless told otherwise: the Computer serves
 * files, so it opens no listening port nobody asked for, and its metrics (names, sizes served)
 * stay on the host. A container healthcheck runs inside the container, where loopback is enough.
 *
 * It starts before the Computer has joined (a Computer may start before its Server), so both
 * routes read the Computer through a getter: until it exists, `/healthz` says `starting` (503)
 * and `/metrics` answers 503.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { FastPathReport } from "./transport/index.ts";

export interface ComputerHttpOptions {
  /** Port; 0 picks a free one (logged, and read back from `port`). */
  port: number;
  /** Interface to bind. Default `127.0.0.1`. */
  host?: string;
}

/** What `/healthz` reads from a running Computer (`RunningComputer` has all of it). */
export interface HealthSource {
  readonly name: string;
  readonly joined: boolean;
  readonly socket: {
    readonly connected: boolean;
    readonly io: { engine?: { transport?: { name?: string } } };
  };
  readonly metrics: { readonly registry: Registry };
  readonly fastPaths: FastPathReport;
}

export interface ComputerHttp {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export type HealthStatus = "ok" | "starting" | "connecting" | "joining";

export interface HealthBody {
  status: HealthStatus;
  name: string;
  office: string;
  connected: boolean;
  joined: boolean;
  transport: string | null;
  /** Each fast path `on`, `off` or `unavailable: <reason>` (transport/index.ts); null while starting. */
  fast_paths: FastPathReport | null;
  uptime_s: number;
}

/** 200 only when joined: that is when Agents of the office can reach this Computer. */
export function health(
  computer: HealthSource | undefined,
  who: { name: string; office: string },
  startedAt: number,
): { status: 200 | 503; body: HealthBody } {
  const connected = computer?.socket.connected ?? false;
  const joined = computer?.joined ?? false;
  let status: HealthStatus = "ok";
  if (!computer) status = "starting";
  else if (!connected) status = "connecting";
  else if (!joined) status = "joining";
  return {
    status: status === "ok" ? 200 : 503,
    body: {
      status,
      name: who.name,
      office: who.office,
      connected,
      joined,
      transport: connected ? (computer?.socket.io.engine?.transport?.name ?? null) : null,
      fast_paths: computer?.fastPaths ?? null,
      uptime_s: Math.round((Date.now() - startedAt) / 1000),
    },
  };
}

export async function startComputerHttp(args: {
  options: ComputerHttpOptions;
  /** The Computer once it runs; `undefined` while it starts. */
  computer: () => HealthSource | undefined;
  name: string;
  office: string;
  log: Logger;
}): Promise<ComputerHttp> {
  const { options, log } = args;
  const host = options.host ?? "127.0.0.1";
  const startedAt = Date.now();

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      return sendJson(res, 405, { code: 405, message: "Method not allowed" });
    }
    if (pathname === "/healthz") {
      const h = health(args.computer(), args, startedAt);
      return sendJson(res, h.status, h.body);
    }
    if (pathname === "/metrics") {
      const registry = args.computer()?.metrics.registry;
      if (!registry) return sendJson(res, 503, { code: 503, message: "Computer starting" });
      const text = await registry.metrics();
      res.writeHead(200, {
        "Content-Type": registry.contentType,
        "Content-Length": Buffer.byteLength(text),
      });
      return void res.end(text);
    }
    sendJson(res, 404, { code: 404, message: "Not found" });
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      log.error({ err }, "http route failed");
      if (!res.headersSent) sendJson(res, 500, { code: 500, message: "Internal error" });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  log.info({ host, port }, "http endpoint listening (/healthz, /metrics)");
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}
