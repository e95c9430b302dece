/**
 * Our Server (server/server.ts `startServer`) in its own process, as `npm run server` runs it,
 * plus the bench's `stats` command (CPU, RSS, event-loop delay of this process) and a count of
 * open Engine.IO sessions (for the half-open handshake check of section 7).
 */
import { serve } from "../lib/ipc.ts";
import { startServer, type RunningServer, type TransportOption } from "@a2c-smcp/server";

let server: RunningServer | null = null;

interface StartArgs {
  maxHttpBufferSize: number;
  token: string;
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
  /** The per-connection bound on queued answer bytes; the Server's default when absent. */
  maxQueuedBytes?: number;
  /** The per-connection bound on bytes held beyond what the client read lately; default when absent. */
  maxUnreadBytes?: number;
  /** The Server's transport (bench section transport); the default when absent. */
  transport?: TransportOption;
  /** A node of a Redis cluster (scale-out over Redis) instead of the in-memory single process. */
  redis?: { url: string; prefix: string };
}

serve({
  start: async (raw) => {
    const a = raw as StartArgs;
    server = await startServer({
      host: "127.0.0.1",
      port: 0,
      maxHttpBufferSize: a.maxHttpBufferSize,
      tokens: [a.token],
      ...(a.pingIntervalMs ? { pingIntervalMs: a.pingIntervalMs } : {}),
      ...(a.pingTimeoutMs ? { pingTimeoutMs: a.pingTimeoutMs } : {}),
      ...(a.maxQueuedBytes ? { maxQueuedBytes: a.maxQueuedBytes } : {}),
      ...(a.maxUnreadBytes ? { maxUnreadBytes: a.maxUnreadBytes } : {}),
      ...(a.transport ? { transport: a.transport } : {}),
      ...(a.redis ? { redis: { url: a.redis.url, prefix: a.redis.prefix } } : {}),
    });
    return { url: server.url };
  },
  sessions: async () => server?.io.engine.clientsCount ?? 0,
  stop: async () => {
    await server?.close();
    server = null;
    return null;
  },
});
