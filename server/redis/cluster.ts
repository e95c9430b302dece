/**
 * Everything a Server node needs to join other nodes over Redis (redis/README.md), as the three seams
 * `startServer` already has: `registry` (offices in Redis), `adapter` (socket.io's own Redis
 * adapter: notifications and routed requests reach sockets on every node) and `link` (the relay
 * reaches Computers on other nodes). Plus the node heartbeat that reaps crashed nodes.
 *
 * Three Redis connections per node: commands (registry scripts), publish, subscribe. Registry
 * lookups get their own connection so they never queue behind a 1 MB chunk being published.
 *
 * Adapter choice: `@socket.io/redis-adapter` on classic Pub/Sub by default, with
 * `publishOnSpecificResponseChannel` so each chunk's ack goes to the requesting node only (the
 * default would deliver every chunk to EVERY node). The sharded Pub/Sub variant (Redis >= 7) is
 * selectable. The redis-streams adapter was not taken: it appends every packet, chunk acks
 * included, to one stream capped by count (10,000 entries), i.e. up to GBs of chunk bytes kept
 * in Redis memory; its gain (connection-state recovery) is not something the protocol uses.
 */
import { randomUUID } from "node:crypto";
import { createAdapter, createShardedAdapter } from "@socket.io/redis-adapter";
import { createClient } from "redis";
import type { ServerOptions as SocketServerOptions } from "socket.io";
import { Events } from "@a2c-smcp/protocol";
import { officeRoom, type SmcpNamespace } from "../connection.ts";
import type { Logger } from "../log.ts";
import { officeNotification } from "../membership.ts";
import type { ComputerLink } from "../relay.ts";
import { guardAdapterClient } from "./guard.ts";
import { DEFAULT_NODE_TTL_MS, NodeHeartbeat } from "./heartbeat.ts";
import { RemoteComputerLink } from "./link.ts";
import { RedisOfficeRegistry, type RedisMember } from "./registry.ts";

export type AdapterKind = "classic" | "sharded";

/** Server-side event: "do you hold socket <sid>?", answered `{node, held}` by every node. */
const SOCKET_HELD = "a2c:socket_held";

export interface RedisClusterOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** Prefix of every key and channel; nodes of one deployment share it. Default `a2c`. */
  prefix?: string;
  /** Default `classic`. */
  adapter?: AdapterKind;
  /** A node whose heartbeat is older than this is dead. Default 6,000 ms. */
  nodeTtlMs?: number;
  /** Heartbeat and reaping period. Default `min(1000, nodeTtlMs / 3)`. */
  heartbeatIntervalMs?: number;
  /** Longest wait for one office-registry command (default 5,000 ms; see registry.ts). */
  commandTimeoutMs?: number;
  /** Longest wait for Redis at start, each connection (default 30,000 ms): then start fails. */
  connectTimeoutMs?: number;
  /** The relay's timeouts (the adapter must not give up first). */
  relayTimeoutMs: number;
  toolCallGraceMs: number;
  logger: Logger;
}

export interface RedisCluster {
  readonly nodeId: string;
  readonly registry: RedisOfficeRegistry;
  readonly adapter: NonNullable<SocketServerOptions["adapter"]>;
  /** `startServer`'s `link` option. */
  readonly link: (nsp: SmcpNamespace) => ComputerLink;
  /** After the Server closed: deregister this node, close the Redis connections. */
  close(): Promise<void>;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/** Drops a client whatever its state (node-redis throws when it is closed already). */
function destroy(client: { destroy(): void }): void {
  try {
    client.destroy();
  } catch {
    // closed already
  }
}

/** Wait before reconnect attempt `retries` to Redis: 50 ms doubling to 500 ms, + 0–100 ms. */
function reconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** Math.min(retries, 10), 500) + Math.floor(Math.random() * 100);
}

/** The URL without its password, for logs. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparsable Redis URL)";
  }
}

export async function connectRedisCluster(opts: RedisClusterOptions): Promise<RedisCluster> {
  const { logger } = opts;
  const prefix = opts.prefix ?? "a2c";
  const nodeId = randomUUID();
  const nodeTtlMs = opts.nodeTtlMs ?? DEFAULT_NODE_TTL_MS;
  const intervalMs = opts.heartbeatIntervalMs ?? Math.min(1000, Math.floor(nodeTtlMs / 3));
  const log = logger.child({ node: nodeId });

  const connect = async (role: string): Promise<ReturnType<typeof createClient>> => {
    // Registry commands fail at once while Redis is unreachable (a join gets a clear refusal,
    // a request a 500) instead of queueing behind a reconnect; adapter traffic may queue.
    const client = createClient({
      url: opts.url,
      disableOfflineQueue: role === "commands",
      // Back within ~0.6 s of Redis answering again (node-redis' default waits up to 2.2 s):
      // a removal or join retried after an outage lands that much sooner (D56).
      socket: { reconnectStrategy: (retries: number) => reconnectDelayMs(retries) },
    });
    // node-redis reconnects by itself; an unhandled 'error' would crash the process.
    let lastError = "no answer";
    client.on("error", (err: Error) => {
      lastError = err.message;
      log.warn({ err: err.message, role }, "Redis connection error");
    });
    // node-redis retries a first connection forever: a Server started while Redis is away
    // would wait silently, never listening and never exiting. Start fails after a bound instead,
    // with one clear line, and whoever supervises the process starts it again.
    let timer: NodeJS.Timeout | undefined;
    const connecting = client.connect();
    try {
      await Promise.race([
        connecting,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const url = redactRedisUrl(opts.url);
            reject(new Error(`cannot reach Redis at ${url} in ${waitMs} ms: ${lastError}`));
          }, waitMs);
        }),
      ]);
    } catch (err) {
      connecting.catch(() => undefined);
      destroy(client);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return client;
  };
  const waitMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const clients: Awaited<ReturnType<typeof connect>>[] = [];
  try {
    for (const role of ["commands", "publish", "subscribe"]) clients.push(await connect(role));
  } catch (err) {
    clients.forEach(destroy);
    throw err;
  }
  const [cmd, pub, sub] = clients as [
    (typeof clients)[0],
    (typeof clients)[0],
    (typeof clients)[0],
  ];

  let nsp: SmcpNamespace | null = null;
  let remote: RemoteComputerLink | null = null;

  const onReaped = (deadNode: string, members: RedisMember[]): void => {
    // This node won the reap: it alone tells the office and the other nodes.
    for (const m of members) {
      nsp?.to(officeRoom(m.officeId)).emit(Events.LeaveOfficeNotify, officeNotification(m));
      if (m.role === "computer") remote?.announceGone(m.sid);
    }
    log.warn({ deadNode, members: members.length }, "members of a dead node left their offices");
  };

  /**
   * Whether the socket of a member holding a seat still exists (registry.ts `holderConnected`):
   * asked of the socket's own node, which alone knows. A ghost (its socket dropped while Redis
   * was unreachable and the removal has not landed yet) then gives way to the join at once.
   */
  const holderConnected = async (holder: RedisMember): Promise<boolean | undefined> => {
    const namespace = nsp;
    if (!namespace) return undefined;
    if (holder.nodeId === nodeId) return namespace.sockets.has(holder.sid);
    let answers: unknown[];
    try {
      answers = await namespace.serverSideEmitWithAck(SOCKET_HELD, holder.sid);
    } catch (err) {
      // Some node did not answer in time; the holder's own answer may still be among these.
      answers = (err as { responses?: unknown[] }).responses ?? [];
    }
    for (const a of answers) {
      const answer = a as { node?: unknown; held?: unknown } | null;
      if (answer?.node === holder.nodeId && typeof answer.held === "boolean") return answer.held;
    }
    return undefined;
  };

  const registry = new RedisOfficeRegistry({
    client: cmd,
    nodeId,
    prefix,
    onReaped,
    onError: (err) => log.error({ err }, "office registry: Redis command failed"),
    holderConnected,
    ...(opts.commandTimeoutMs !== undefined ? { commandTimeoutMs: opts.commandTimeoutMs } : {}),
  });
  const adapterPub = guardAdapterClient(pub, log);
  const adapterSub = guardAdapterClient(sub, log);
  const adapter =
    opts.adapter === "sharded"
      ? createShardedAdapter(adapterPub, adapterSub, { channelPrefix: `${prefix}:sio` })
      : createAdapter(adapterPub, adapterSub, {
          key: `${prefix}:sio`,
          publishOnSpecificResponseChannel: true,
        });
  const heartbeat = new NodeHeartbeat({
    registry,
    subscriber: sub,
    ttlMs: nodeTtlMs,
    intervalMs,
    logger: log,
    // Reaped while alive (or Redis came back empty): our sockets' memberships are gone from
    // Redis. Close their connections so the clients reconnect and join again instead of living
    // in offices nobody else can see. Closed below socket.io, not with a DISCONNECT packet: a
    // client told "io server disconnect" does not reconnect by itself (D56).
    onFenced: () => {
      for (const socket of nsp?.sockets.values() ?? []) socket.conn.close();
    },
  });
  await heartbeat.start();
  log.info(
    { redis: redactRedisUrl(opts.url), prefix, adapter: opts.adapter ?? "classic", nodeTtlMs },
    "joined the Redis cluster",
  );

  let closed: Promise<void> | null = null;
  return {
    nodeId,
    registry,
    adapter,
    link: (namespace) => {
      nsp = namespace;
      namespace.on(SOCKET_HELD, (sid: unknown, ack: unknown) => {
        if (typeof sid === "string" && typeof ack === "function") {
          (ack as (answer: { node: string; held: boolean }) => void)({
            node: nodeId,
            held: namespace.sockets.has(sid),
          });
        }
      });
      remote = new RemoteComputerLink({
        nsp: namespace,
        logger: log,
        relayTimeoutMs: opts.relayTimeoutMs,
        toolCallGraceMs: opts.toolCallGraceMs,
      });
      return remote;
    },
    close: () =>
      (closed ??= (async () => {
        remote?.close();
        await heartbeat.stop();
        // close() lets queued commands finish, which never happens while Redis is away.
        await Promise.all(
          clients.map(async (c) => {
            if (c.isReady) await c.close().catch(() => c.destroy());
            else c.destroy();
          }),
        );
        log.info("left the Redis cluster");
      })()),
  };
}
