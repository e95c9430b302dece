/**
 * The Server's `/metrics` (Prometheus text), on the client port by default, or on a listener of
 * its own (`metricsListen`: host and port), so an operator can keep the endpoint off the port
 * every client reaches. The separate listener serves `/metrics` only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Registry } from "prom-client";

export interface MetricsListenOptions {
  /** Interface to bind. Default 127.0.0.1 (a scraper on another host needs 0.0.0.0 or an IP). */
  host?: string;
  /** Port; 0 = any free port. */
  port: number;
}

export interface MetricsListener {
  /** `http://host:port/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Answers a `/metrics` request from `registry`. */
export async function sendMetrics(res: ServerResponse, registry: Registry): Promise<void> {
  const text = await registry.metrics();
  res.writeHead(200, {
    "Content-Type": registry.contentType,
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

function isMetricsRequest(req: IncomingMessage): boolean {
  const readOnly = req.method === "GET" || req.method === "HEAD";
  return readOnly && (req.url ?? "/").split("?")[0] === "/metrics";
}

export async function startMetricsListener(
  opts: MetricsListenOptions,
  registry: Registry,
  onError: (err: unknown) => void,
): Promise<MetricsListener> {
  const host = opts.host ?? "127.0.0.1";
  const http = createServer((req, res) => {
    if (!isMetricsRequest(req)) {
      res.writeHead(404, { "Content-Length": 0 }).end();
      return;
    }
    sendMetrics(res, registry).catch((err: unknown) => {
      onError(err);
      if (!res.headersSent) res.writeHead(500, { "Content-Length": 0 });
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(opts.port, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
