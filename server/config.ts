/**
 * Command line and environment → ServerOptions. Flags win over env (team convention).
 *
 *   --host H                  A2C_HOST                  default 127.0.0.1
 *   --port P                  A2C_PORT                  default 7100 (0 = any free port)
 *   --path P                  A2C_PATH                  default /socket.io/
 *   --max-http-buffer-size N  A2C_MAX_HTTP_BUFFER_SIZE  default 1000000
 *   --token T (repeatable)    A2C_TOKENS=T1,T2          unscoped tokens
 *   --tokens-file F           A2C_TOKENS_FILE           see auth.ts for the format (scopes)
 *   --no-auth                 A2C_NO_AUTH=1             development only
 *   --relay-timeout-ms N      A2C_RELAY_TIMEOUT_MS      default 30000
 *   --redis URL               A2C_REDIS_URL             several nodes on one Redis (redis/README.md)
 *   --redis-prefix P          A2C_REDIS_PREFIX          default a2c (shared by a deployment's nodes)
 *   --redis-adapter K         A2C_REDIS_ADAPTER         classic (default) | sharded (Redis >= 7)
 *                             A2C_REDIS_NODE_TTL_MS     dead-node timeout, default 6000
 *   --max-connections-per-ip N A2C_MAX_CONNECTIONS_PER_IP default 100 (0 = no limit)
 *   --limit-loopback          A2C_LIMIT_LOOPBACK=1      loopback peers count too (default exempt)
 *   --max-events-per-second N A2C_MAX_EVENTS_PER_SECOND  per socket, default 2000 (0 = no limit)
 *   --events-burst N          A2C_EVENTS_BURST          default = --max-events-per-second
 *   --max-queued-bytes N      A2C_MAX_QUEUED_BYTES      per connection, default 64 MiB (0 = no bound)
 *   --max-queued-bytes-total N A2C_MAX_QUEUED_BYTES_TOTAL all connections, default 512 MiB
 *   --max-unread-bytes N      A2C_MAX_UNREAD_BYTES      held beyond what the client took in the
 *                                                       last second, and upload chunks in flight
 *                                                       to one Computer, default 8 MiB (0 = off)
 *   --outbound-stall-ms N     A2C_OUTBOUND_STALL_MS     drop a connection whose queue does not
 *                                                       move this long, default 30000 (0 = never)
 *   --metrics-port P          A2C_METRICS_PORT          /metrics on its own port (default: client port)
 *   --metrics-host H          A2C_METRICS_HOST          its interface, default 127.0.0.1
 *   --stock-transport         A2C_SERVER_TRANSPORT=stock  every transport fast path off
 *   (A2C_LOG_LEVEL sets the log level.)
 */
import { parseArgs } from "node:util";
import { loadTokensFile, type TokenGrant } from "./auth.ts";
import type { ServerOptions } from "./server.ts";
import type { TransportOption } from "./transport/index.ts";

export const USAGE = `usage: a2c-server [--host 127.0.0.1] [--port 7100] [--path /socket.io/]
  [--max-http-buffer-size 1000000] [--token T]... [--tokens-file F] [--no-auth]
  [--relay-timeout-ms 30000] [--redis URL [--redis-prefix a2c] [--redis-adapter classic|sharded]]
  [--max-connections-per-ip 100] [--limit-loopback] [--max-events-per-second 2000] [--events-burst N]
  [--max-queued-bytes 67108864] [--max-queued-bytes-total 536870912] [--max-unread-bytes 8388608]
  [--outbound-stall-ms 30000]
  [--metrics-port P [--metrics-host 127.0.0.1]] [--stock-transport]
Each flag can also come from the environment: A2C_HOST, A2C_PORT, A2C_PATH,
A2C_MAX_HTTP_BUFFER_SIZE, A2C_TOKENS (comma-separated), A2C_TOKENS_FILE, A2C_NO_AUTH,
A2C_RELAY_TIMEOUT_MS, A2C_REDIS_URL, A2C_REDIS_PREFIX, A2C_REDIS_ADAPTER (and
A2C_REDIS_NODE_TTL_MS), A2C_MAX_CONNECTIONS_PER_IP, A2C_LIMIT_LOOPBACK, A2C_MAX_EVENTS_PER_SECOND,
A2C_EVENTS_BURST, A2C_MAX_QUEUED_BYTES, A2C_MAX_QUEUED_BYTES_TOTAL, A2C_MAX_UNREAD_BYTES,
A2C_OUTBOUND_STALL_MS,
A2C_METRICS_PORT, A2C_METRICS_HOST, A2C_SERVER_TRANSPORT=stock.
Flags win over the environment. 0 turns a limit off.`;

/**
 * Defaults of the per-client limits for the CLI (the production entry point; startServer itself
 * defaults to no limit). 100 sessions per address is the protocol's DoS recommendation. The
 * event rate is 20x its 100 req/s because chunk pulls are requests: 100/s would cap a 64 KiB
 * base64 pull at ~6.5 MB/s, 2000/s sits above what a base64 pull moves end to end (about
 * 800-1400 chunks/s) so it never throttles a default pull (docs/configuration.md, "Per-client
 * limits", has the trade-off).
 */
export const CLI_LIMIT_DEFAULTS = { maxConnectionsPerIp: 100, maxEventsPerSecond: 2000 } as const;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Largest delay a Node timer can hold (about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

function integer(
  name: string,
  text: string | undefined,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined || text === "") return undefined;
  if (!/^\d+$/.test(text.trim())) {
    throw new ConfigError(`${name} must be an integer, got "${text}"`);
  }
  const n = Number(text.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}`);
  }
  return n;
}

function truthy(text: string | undefined): boolean {
  return text !== undefined && /^(1|true|yes|on)$/i.test(text.trim());
}

/** `--stock-transport` / `A2C_SERVER_TRANSPORT=stock|fast` (server/transport/); undefined: default. */
function transportFrom(stockFlag: boolean, env: NodeJS.ProcessEnv): TransportOption | undefined {
  const mode = env.A2C_SERVER_TRANSPORT?.trim() || undefined;
  if (mode !== undefined && mode !== "stock" && mode !== "fast") {
    throw new ConfigError(`A2C_SERVER_TRANSPORT must be stock or fast, got "${mode}"`);
  }
  return stockFlag || mode === "stock" ? "stock" : undefined;
}

export async function configFromArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ServerOptions & { help?: boolean }> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        host: { type: "string" },
        port: { type: "string" },
        path: { type: "string" },
        "max-http-buffer-size": { type: "string" },
        token: { type: "string", multiple: true },
        "tokens-file": { type: "string" },
        "no-auth": { type: "boolean" },
        "relay-timeout-ms": { type: "string" },
        redis: { type: "string" },
        "redis-prefix": { type: "string" },
        "redis-adapter": { type: "string" },
        "max-connections-per-ip": { type: "string" },
        "limit-loopback": { type: "boolean" },
        "max-events-per-second": { type: "string" },
        "events-burst": { type: "string" },
        "max-queued-bytes": { type: "string" },
        "max-queued-bytes-total": { type: "string" },
        "max-unread-bytes": { type: "string" },
        "outbound-stall-ms": { type: "string" },
        "metrics-port": { type: "string" },
        "metrics-host": { type: "string" },
        "stock-transport": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const v = parsed.values;
  if (v.help) return { help: true };

  const port = integer("--port", v.port ?? env.A2C_PORT, 0, 65535);
  const tokensFile = v["tokens-file"] ?? env.A2C_TOKENS_FILE;
  const flagTokens = v.token ?? [];
  const envTokens = (env.A2C_TOKENS ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  const tokens: TokenGrant[] = [...flagTokens, ...envTokens].map((token) => ({ token }));
  if (tokensFile) {
    try {
      tokens.push(...(await loadTokensFile(tokensFile)));
    } catch (err) {
      throw new ConfigError(`cannot read tokens file: ${(err as Error).message}`);
    }
  }
  const noAuth = v["no-auth"] === true || truthy(env.A2C_NO_AUTH);
  if (!noAuth && tokens.length === 0) {
    throw new ConfigError("no tokens configured: pass --token / --tokens-file, or --no-auth");
  }
  const options: ServerOptions = { tokens, noAuth, processMetrics: true };
  const host = v.host ?? env.A2C_HOST;
  if (host) options.host = host;
  if (port !== undefined) options.port = port;
  const path = v.path ?? env.A2C_PATH;
  if (path) options.path = path;
  const maxBuf = integer(
    "--max-http-buffer-size",
    v["max-http-buffer-size"] ?? env.A2C_MAX_HTTP_BUFFER_SIZE,
    1024,
  );
  if (maxBuf !== undefined) options.maxHttpBufferSize = maxBuf;
  const relayTimeout = integer(
    "--relay-timeout-ms",
    v["relay-timeout-ms"] ?? env.A2C_RELAY_TIMEOUT_MS,
    1,
    MAX_TIMER_MS,
  );
  if (relayTimeout !== undefined) options.relayTimeoutMs = relayTimeout;
  options.maxConnectionsPerIp =
    integer(
      "--max-connections-per-ip",
      v["max-connections-per-ip"] ?? env.A2C_MAX_CONNECTIONS_PER_IP,
      0,
      1_000_000,
    ) ?? CLI_LIMIT_DEFAULTS.maxConnectionsPerIp;
  options.maxEventsPerSecond =
    integer(
      "--max-events-per-second",
      v["max-events-per-second"] ?? env.A2C_MAX_EVENTS_PER_SECOND,
      0,
      1_000_000,
    ) ?? CLI_LIMIT_DEFAULTS.maxEventsPerSecond;
  if (v["limit-loopback"] === true || truthy(env.A2C_LIMIT_LOOPBACK))
    options.exemptLoopback = false;
  const burst = integer("--events-burst", v["events-burst"] ?? env.A2C_EVENTS_BURST, 1, 10_000_000);
  if (burst !== undefined) options.eventsBurst = burst;
  const MAX_BYTES = 2 ** 50;
  const queued = integer(
    "--max-queued-bytes",
    v["max-queued-bytes"] ?? env.A2C_MAX_QUEUED_BYTES,
    0,
    MAX_BYTES,
  );
  if (queued !== undefined) options.maxQueuedBytes = queued;
  const queuedTotal = integer(
    "--max-queued-bytes-total",
    v["max-queued-bytes-total"] ?? env.A2C_MAX_QUEUED_BYTES_TOTAL,
    0,
    MAX_BYTES,
  );
  if (queuedTotal !== undefined) options.maxQueuedBytesTotal = queuedTotal;
  const unread = integer(
    "--max-unread-bytes",
    v["max-unread-bytes"] ?? env.A2C_MAX_UNREAD_BYTES,
    0,
    MAX_BYTES,
  );
  if (unread !== undefined) options.maxUnreadBytes = unread;
  const stall = integer(
    "--outbound-stall-ms",
    v["outbound-stall-ms"] ?? env.A2C_OUTBOUND_STALL_MS,
    0,
    MAX_TIMER_MS,
  );
  if (stall !== undefined) options.outboundStallMs = stall;
  const metricsPort = integer(
    "--metrics-port",
    v["metrics-port"] ?? env.A2C_METRICS_PORT,
    0,
    65535,
  );
  const metricsHost = v["metrics-host"] ?? env.A2C_METRICS_HOST;
  if (metricsPort !== undefined) {
    options.metricsListen = { port: metricsPort, ...(metricsHost ? { host: metricsHost } : {}) };
  } else if (v["metrics-host"] !== undefined) {
    throw new ConfigError("--metrics-host needs --metrics-port P");
  }
  const transport = transportFrom(v["stock-transport"] === true, env);
  if (transport !== undefined) options.transport = transport;
  const redisUrl = v.redis ?? env.A2C_REDIS_URL;
  if (redisUrl) {
    if (!/^rediss?:\/\//.test(redisUrl)) {
      throw new ConfigError("--redis must be a redis:// or rediss:// URL");
    }
    const adapter = v["redis-adapter"] ?? env.A2C_REDIS_ADAPTER ?? "classic";
    if (adapter !== "classic" && adapter !== "sharded") {
      throw new ConfigError("--redis-adapter must be classic or sharded");
    }
    const prefix = v["redis-prefix"] ?? env.A2C_REDIS_PREFIX;
    const nodeTtlMs = integer(
      "A2C_REDIS_NODE_TTL_MS",
      env.A2C_REDIS_NODE_TTL_MS,
      300,
      MAX_TIMER_MS,
    );
    options.redis = {
      url: redisUrl,
      adapter,
      ...(prefix ? { prefix } : {}),
      ...(nodeTtlMs !== undefined ? { nodeTtlMs } : {}),
    };
  } else if (v["redis-prefix"] !== undefined || v["redis-adapter"] !== undefined) {
    throw new ConfigError("--redis-prefix / --redis-adapter need --redis URL");
  }
  return options;
}
