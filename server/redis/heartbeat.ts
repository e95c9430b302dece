/**
 * Node liveness for the Redis registry. Each node:
 * - subscribes to its liveness channel (`P:node:<id>`) on its adapter's subscriber connection,
 *   so a crashed process stops counting as alive the moment Redis drops its TCP connection, and
 *   a node whose adapter can no longer hear the bus is not counted as alive either;
 * - keeps a heartbeat key with a TTL, refreshed every `intervalMs`, so a hung or partitioned node
 *   stops counting as alive within `ttlMs`;
 * - on every tick, reaps every dead node (its members leave their offices; see registry.ts);
 * - when its own heartbeat finds it was reaped (it looked dead to others, e.g. a Redis blip),
 *   fences: `onFenced` disconnects its sockets so their clients reconnect and join again, and the
 *   node registers anew. Membership is never silently resurrected.
 */
import type { Logger } from "../log.ts";
import type { RedisOfficeRegistry } from "./registry.ts";

/** The subscriber side of a node-redis client (the adapter's `subClient`). */
export interface LivenessSubscriber {
  subscribe(channel: string, listener: (message: string) => void): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
}

export interface NodeHeartbeatOptions {
  registry: RedisOfficeRegistry;
  subscriber: LivenessSubscriber;
  /** Heartbeat key lifetime. Default 6,000 ms. */
  ttlMs?: number;
  /** Tick period (heartbeat + reaping). Default `ttlMs / 3`. */
  intervalMs?: number;
  logger: Logger;
  /** This node was reaped by others: drop every local connection (they will rejoin). */
  onFenced: () => void;
}

export const DEFAULT_NODE_TTL_MS = 6_000;

export class NodeHeartbeat {
  readonly ttlMs: number;
  readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly opts: NodeHeartbeatOptions) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_NODE_TTL_MS;
    this.intervalMs = opts.intervalMs ?? Math.max(50, Math.floor(this.ttlMs / 3));
  }

  /** Subscribes the liveness channel, then registers: a registered node is always "alive". */
  async start(): Promise<void> {
    const { registry, subscriber } = this.opts;
    await subscriber.subscribe(registry.livenessChannel(), () => undefined);
    await registry.registerNode(this.ttlMs);
    this.timer = setInterval(() => {
      // One tick at a time: a slow Redis must not pile ticks up.
      this.ticking = this.ticking.then(() => this.tick());
    }, this.intervalMs);
  }

  /** One heartbeat and one reaping pass (exposed for tests that want it now). */
  async tick(): Promise<void> {
    if (this.stopped) return;
    const { registry, logger } = this.opts;
    try {
      if (!(await registry.heartbeat(this.ttlMs))) {
        logger.warn({ node: registry.nodeId }, "this node was reaped by the cluster: fencing");
        registry.clearLocal();
        this.opts.onFenced();
        await registry.registerNode(this.ttlMs);
      }
      for (const node of await registry.nodes()) {
        if (node === registry.nodeId) continue;
        const reaped = await registry.reapNode(node);
        if (reaped) logger.warn({ node, members: reaped.length }, "reaped a dead Server node");
      }
    } catch (err) {
      logger.warn({ err }, "node heartbeat failed (Redis unreachable?)");
    }
  }

  /**
   * Clean stop: no more ticks, then this node's remaining entries are removed and it leaves the
   * node set (so nobody waits for its TTL). Call after the node's sockets have left their offices.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const { registry, subscriber, logger } = this.opts;
    try {
      await registry.reapNode(registry.nodeId, true);
      // Not awaited: with Redis away it would wait for a reconnect; closing the connection
      // drops the subscription anyway.
      subscriber.unsubscribe(registry.livenessChannel()).catch(() => undefined);
    } catch (err) {
      logger.warn({ err }, "could not deregister this node from Redis");
    }
  }
}
