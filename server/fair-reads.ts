/**
 * One WebSocket message per connection per event-loop turn, so a client that sends many messages
 * at once cannot hold the Server's only thread while other clients' requests wait.
 *
 * ws parses every frame of a TCP read and, by default, emits all of their messages synchronously
 * in that read's callback (libuv reads up to 32 × 64 KiB from one socket before turning to the
 * next). An Agent that emits 1,000 `client:get_blob` at once therefore costs the Server one
 * stretch of ~1,000 routings (tens of ms) before any other socket is read, and every other Agent's
 * chunk waits for it. With ws's `allowSynchronousEvents: false` a connection's next message is
 * emitted in a later turn (`setImmediate`), after the other connections' I/O; ws pauses the
 * socket while its parsed backlog waits, so a flood stays in the kernel's buffers instead of the
 * heap. Per message it costs one `setImmediate` (a few µs); what it buys is that a turn handles at
 * most one message of each busy connection.
 */
import { WebSocketServer, type ServerOptions } from "ws";

/** engine.io's `wsEngine`: ws's server with messages emitted one per connection per turn. */
export class FairWebSocketServer extends WebSocketServer {
  constructor(options: ServerOptions, callback?: () => void) {
    super({ ...options, allowSynchronousEvents: false }, callback);
  }
}
