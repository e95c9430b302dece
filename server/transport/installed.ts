/**
 * The classes of the installed socket.io, engine.io and ws that the fast paths change, and a
 * socket in memory, for the probes that send a packet through them at start. socket.io does not
 * export its `Client` (one per engine.io session, whose `writeToEngine` session-writes.ts wraps per
 * instance), so it is loaded from the file socket.io's own entry point requires: the same module
 * instance.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Duplex } from "node:stream";
import { Socket as EngineSession, transports } from "engine.io";
import { WebSocket } from "ws";

/** The methods of socket.io's `Client` the fast paths wrap. */
export interface ClientPrototype {
  writeToEngine?: unknown;
}

let client: ClientPrototype | string | undefined;

/** socket.io's `Client.prototype`, or why it cannot be found. */
export function socketIoClient(): ClientPrototype | string {
  if (client !== undefined) return client;
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve("socket.io");
    const mod = require(join(dirname(entry), "client.js")) as { Client?: { prototype?: unknown } };
    const proto = mod.Client?.prototype;
    client = proto && typeof proto === "object" ? proto : "socket.io has no Client class";
  } catch (err) {
    client = `socket.io's Client cannot be loaded: ${(err as Error).message}`;
  }
  return client;
}

/** engine.io's WebSocket transport class (`transports.websocket`), if it has one. */
export function engineWebSocketTransport(): (new (...args: never[]) => unknown) | null {
  const t = (transports as Record<string, unknown>).websocket;
  return typeof t === "function" ? (t as new (...args: never[]) => unknown) : null;
}

/**
 * A WebSocket transport of the installed engine.io around `ws` (any emitter standing for ws's
 * WebSocket), built as engine.io builds one for an upgrade; null if the class is missing.
 */
export function probeWebSocketTransport(ws: object): Record<string, unknown> | null {
  const Transport = engineWebSocketTransport() as
    (new (req: object, opts: object) => Record<string, unknown>) | null;
  if (!Transport) return null;
  return new Transport({ _query: { EIO: "4" }, websocket: ws }, {});
}

/** engine.io's session class (its `Socket`). */
export const engineSessionPrototype = EngineSession.prototype as unknown as Record<string, unknown>;

/** A server-side WebSocket as the installed ws builds one (no socket yet). */
export function serverSideWebSocket(): Record<string, unknown> {
  const ServerSide = WebSocket as unknown as new (
    address: null,
    protocols: undefined,
    options: object,
  ) => Record<string, unknown>;
  return new ServerSide(null, undefined, {});
}

/**
 * A socket in memory for the probes: ws and engine.io read what is pushed into it and write into
 * `writes` (one entry per write reaching it, a `writev` as one entry of several chunks).
 */
export class MemorySocket extends Duplex {
  readonly writes: Buffer[][] = [];

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.writes.push([chunk]);
    done();
  }

  override _writev(chunks: { chunk: Buffer }[], done: () => void): void {
    this.writes.push(chunks.map((c) => c.chunk));
    done();
  }

  setTimeout(): this {
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }
}

/** A server-side ws WebSocket of the installed ws, on a `MemorySocket`. */
export function memoryWebSocket(): {
  ws: Record<string, unknown> & { on(event: string, fn: (...a: unknown[]) => void): unknown };
  socket: MemorySocket;
} {
  const socket = new MemorySocket();
  const ws = serverSideWebSocket() as Record<string, unknown> & {
    setSocket(socket: Duplex, head: Buffer, options: object): void;
    on(event: string, fn: (...a: unknown[]) => void): unknown;
  };
  ws.setSocket(socket, Buffer.alloc(0), {
    allowSynchronousEvents: true,
    maxPayload: 1 << 20,
    skipUTF8Validation: false,
  });
  return { ws, socket };
}
