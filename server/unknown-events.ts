/**
 * Events nobody handles on the Server (no listener on the socket). One that asked for an ack is
 * answered at once with the flat `unknownEvent` error (404, `details.reason: "unknown_event"`,
 * the name cut to 64 characters): "never silence where an ack was asked", and a future event
 * such as `client:put_blob` learns it is not supported instead of waiting for its own timeout.
 * One without an ack is dropped before socket.io's dispatch, at the cost of one lookup.
 *
 * The lookup is the socket's own `listenerCount`: Node's EventEmitter keeps its listeners in a
 * null-prototype object, so no name (`__proto__`, `toString`, `constructor`, a number, 10,000
 * characters) reaches an object's prototype (test/server/unknown-events.test.ts holds it to
 * that). Installed with `socket.use` after the per-socket event rate limit (limits.ts), so a
 * flood of unknown events costs what a flood of known ones does.
 */
import type { Counter } from "prom-client";
import { unknownEvent } from "@a2c-smcp/protocol";
import type { Logger } from "./log.ts";

/** One DEBUG line per socket per this interval while it keeps sending unknown events. */
const LOG_EVERY_MS = 10_000;

/** The part of a socket.io server socket this needs. */
export interface EventFilterSocket {
  readonly id: string;
  use(fn: (packet: unknown[], next: (err?: Error) => void) => void): unknown;
  listenerCount(event: string): number;
}

export function answerUnknownEvents(
  socket: EventFilterSocket,
  refusals: Counter<"reason">,
  logger: Logger,
): void {
  let lastLogAt = 0;
  socket.use((packet, next) => {
    const event = packet[0];
    if (
      (typeof event === "string" || typeof event === "number") &&
      socket.listenerCount(String(event)) > 0
    )
      return next();
    const ack = packet[packet.length - 1];
    if (typeof ack !== "function") return; // nobody waits for an answer
    refusals.inc({ reason: "unknown_event" });
    const answer = unknownEvent(event);
    (ack as (a: unknown) => void)(answer);
    const now = Date.now();
    if (now - lastLogAt >= LOG_EVERY_MS) {
      lastLogAt = now;
      logger.debug({ sid: socket.id, event: answer.details?.event }, "unknown event answered");
    }
  });
}
