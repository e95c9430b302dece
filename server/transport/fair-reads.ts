/**
 * Fair reads: one WebSocket message per connection per event-loop turn, so a client that sends
 * many messages at once cannot hold the Server's only thread while other clients' requests wait.
 *
 * ws parses every frame of a TCP read and, by default, emits all of their messages synchronously
 * in that read's callback, and libuv reads one socket up to 32 times (64 KiB each) before it
 * turns to the next. An Agent that emits 1,000 `client:get_blob` at once, or a Computer with a
 * backlog of answers, thus held the Server for one long stretch, and every other Agent's chunk
 * waited behind it. With ws's `allowSynchronousEvents: false` a connection's next message is
 * emitted in a later turn (`setImmediate`), after the other connections' I/O; ws pauses the socket
 * while its parsed backlog waits, so a flood stays in the kernel's buffers instead of the heap.
 *
 * The price: one Agent alone on the Server pulls somewhat less at large windows (an extra turn,
 * often a pause and resume of the socket, per message). Budgets that let a connection handle
 * several messages a turn cost less but gave back most of the tail: socket.io runs handlers in
 * `process.nextTick` after ws's parse loop, so a budget cannot see their cost. A Server is shared
 * by design.
 *
 * Departure from stock: the option and engine.io's `wsEngine` are public; the departure is the
 * non-default behaviour. `probeFairReads` checks that the installed ws knows the option.
 */
import { WebSocketServer, type ServerOptions } from "ws";

/** An engine.io `wsEngine` and whether engine.io has built its server from it. */
export interface FairReadsEngine {
  readonly wsEngine: new (options: ServerOptions, callback?: () => void) => WebSocketServer;
  /** True once engine.io constructed the WebSocket server (the option took effect). */
  readonly used: boolean;
}

/** ws's server with messages emitted one per connection per turn, for one engine.io Server. */
export function fairReadsEngine(): FairReadsEngine {
  let used = false;
  class FairWebSocketServer extends WebSocketServer {
    constructor(options: ServerOptions, callback?: () => void) {
      super({ ...options, allowSynchronousEvents: false }, callback);
      used = true;
    }
  }
  return {
    wsEngine: FairWebSocketServer,
    get used() {
      return used;
    },
  };
}

/** Whether the installed ws has `allowSynchronousEvents`: null, or why not. */
export function probeFairReads(): string | null {
  try {
    const probe = new WebSocketServer({ noServer: true });
    const known = (probe.options as { allowSynchronousEvents?: unknown }).allowSynchronousEvents;
    probe.close();
    return known === true ? null : "ws has no allowSynchronousEvents option";
  } catch (err) {
    return `ws: ${(err as Error).message}`;
  }
}
