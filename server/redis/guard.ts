/**
 * `@socket.io/redis-adapter` fires Redis commands without handling their promises (publish,
 * unsubscribe on close, PUBSUB NUMSUB before each request with acks). With node-redis those
 * reject when the client closes with commands still queued (shutdown while Redis is away), and
 * an unhandled rejection ends a Node process. This wraps the adapter's two clients so those
 * commands never reject: failures are logged, and a failed server count counts only this node
 * (a request with acks then completes with what this node has; the relay answers the rest).
 */
import type { Logger } from "../log.ts";

const GUARDED = new Set([
  "publish",
  "sPublish",
  "sendCommand",
  "subscribe",
  "unsubscribe",
  "pSubscribe",
  "pUnsubscribe",
  "sSubscribe",
  "sUnsubscribe",
]);

export function guardAdapterClient<T extends object>(client: T, log: Logger): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || prop === "constructor") return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (typeof prop !== "string" || !GUARDED.has(prop)) return fn.bind(target);
      return (...args: unknown[]): unknown => {
        const result = fn.apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((err: unknown) => {
          log.warn({ err: (err as Error)?.message, command: prop }, "adapter Redis command failed");
          // PUBSUB NUMSUB reply shape: [channel, count]. Count this node only.
          return prop === "sendCommand" ? ["", 1] : undefined;
        });
      };
    },
  });
}
