/**
 * At most `MAX_MESSAGES_PER_STRETCH` WebSocket messages of one connection per stretch of
 * synchronous work, so a client that sends many messages at once cannot hold the Server's only
 * thread while other clients' requests wait.
 *
 * ws parses every frame of a TCP read and, by default, emits all of their messages synchronously
 * in that read's callback (one read is up to 64 KiB: ~300 small `client:get_blob` requests). An
 * Agent that emits 1,000 requests at once therefore cost the Server stretches of hundreds of
 * routings (tens of ms) before any other socket was read, and every other Agent's chunk waited.
 *
 * ws can instead emit each message in a later turn (`allowSynchronousEvents: false`, through
 * `setImmediate`), after the other connections' I/O, pausing the socket while its parsed backlog
 * waits. Doing that for every message cost 5–15% of one Agent's throughput at windows 8–16
 * (measured side by side: one extra event-loop turn, and often a pause/resume of the socket, per
 * message). So the choice is made per message: ws reads `_allowSynchronousEvents` before each
 * one, and here it is a getter that says yes for the first messages of a stretch and no after
 * that. The count restarts when the stretch ends (a `process.nextTick`, which runs once the read's
 * callback or the deferred emit returns). A chunk stream (one to a few messages per read) never
 * reaches the limit and pays nothing; a flood is handled `MAX_MESSAGES_PER_STRETCH` at a time,
 * interleaved with everyone else's I/O.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";

/** Messages of one connection handled in one synchronous stretch before the rest wait a turn. */
export const MAX_MESSAGES_PER_STRETCH = 16;

/** The ws internal this module relies on (ws 8.17+: `Receiver#_allowSynchronousEvents`). */
interface Receiver {
  _allowSynchronousEvents: boolean;
}

/** Makes `ws`'s receiver emit at most MAX_MESSAGES_PER_STRETCH messages per stretch. */
export function limitMessagesPerStretch(ws: WebSocket): boolean {
  const receiver = (ws as unknown as { _receiver?: Receiver })._receiver;
  if (!receiver || typeof receiver._allowSynchronousEvents !== "boolean") return false;
  let emitted = 0;
  const restart = (): void => {
    emitted = 0;
  };
  Object.defineProperty(receiver, "_allowSynchronousEvents", {
    configurable: true,
    get(): boolean {
      if (emitted === 0) process.nextTick(restart);
      return ++emitted <= MAX_MESSAGES_PER_STRETCH;
    },
  });
  return true;
}

/** engine.io's `wsEngine`: ws's server with `limitMessagesPerStretch` on every connection. */
export class FairWebSocketServer extends WebSocketServer {
  override handleUpgrade(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    callback: (client: WebSocket, request: IncomingMessage) => void,
  ): void {
    super.handleUpgrade(request, socket, head, (client, req) => {
      limitMessagesPerStretch(client);
      callback(client, req);
    });
  }
}
