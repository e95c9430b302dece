/**
 * One WebSocket message per connection per event-loop turn, so a client that sends many messages
 * at once cannot hold the Server's only thread while other clients' requests wait.
 *
 * ws parses every frame of a TCP read and, by default, emits all of their messages synchronously
 * in that read's callback, and libuv reads one socket up to 32 times (64 KiB each) before it
 * turns to the next. An Agent that emits 1,000 `client:get_blob` at once, or a Computer with a
 * backlog of answers, thus held the Server for one long stretch, and every other Agent's chunk
 * waited behind it. With ws's `allowSynchronousEvents: false` a connection's next message is
 * emitted in a later turn (`setImmediate`), after the other connections' I/O; ws pauses the socket
 * while its parsed backlog waits, so a flood stays in the kernel's buffers instead of the heap.
 *
 * Measured (5-minute soaks, same load): the probe's two arrival hops at the Server, p99 band
 * 6.7 → 4.2 ms; the Server's event-loop delay p99 5.8 → 3.7 ms. Price: one Agent alone on the
 * Server pulls 5–15% less at windows 8–16 (an extra turn, often a pause and resume of the socket,
 * per message; within noise at window 1). Budgets that let a connection handle several messages
 * a turn (16 per read callback; 16 messages or 256 KiB per turn, through a getter on ws's
 * receiver) cost less (~0–6%) but gave back most of the tail (arrival hops 5.5–6.7 ms): socket.io
 * runs handlers in `process.nextTick` after ws's parse loop, so a budget cannot see their cost.
 * A Server is shared by design; the option is ws's own, documented one.
 */
import { WebSocketServer, type ServerOptions } from "ws";

/** engine.io's `wsEngine`: ws's server with messages emitted one per connection per turn. */
export class FairWebSocketServer extends WebSocketServer {
  constructor(options: ServerOptions, callback?: () => void) {
    super({ ...options, allowSynchronousEvents: false }, callback);
  }
}
