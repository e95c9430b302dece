/**
 * An engine.io session's writes, the two places the Server reads engine.io and ws internals on the
 * way out: batched (the `batch_writes` fast path) and counted (the session meter, which the
 * outbound bounds need whatever the transport option).
 *
 * Batched writes: fewer writes per answer on WebSocket sessions. The parts of one socket.io
 * packet leave in one engine.io flush, and one flush leaves in one `writev`.
 *
 * A binary-carriage chunk (D19) crosses the Server as one socket.io packet encoded in two
 * engine.io packets: the ack's text part and its attachment. Stock socket.io writes them with
 * two `conn.write` calls, and engine.io flushes after each: the first part is sent at once, the
 * attachment waits in the write buffer until the transport reports the first write done (a later
 * event-loop turn) and then goes out in a second flush. engine.io's WebSocket transport then
 * hands each packet of a flush to ws separately, and ws writes each frame to the TCP socket on its
 * own. So every binary ack cost the Server two `writev` calls, an extra event-loop turn, and the
 * Agent two wake-ups; system calls and wake-ups are the largest fixed cost of a chunk.
 *
 * Here (1) socket.io's `Client.writeToEngine` writes every part with engine.io's flush held back
 * and flushes once after the last part, and (2) the WebSocket transport's `send(packets)` runs with
 * the TCP socket corked, so the frames of one flush reach the kernel in one `writev`. Bytes, their
 * order and the frame boundaries are what stock socket.io sends (the Agent is a stock client).
 * Both act only where a chunk's fixed costs decide: packets whose binary parts are at most
 * `BATCHED_ATTACHMENT_MOST` (64 KiB); larger ones go out as stock socket.io writes them.
 *
 * Why this is safe, from the installed code (versions pinned in server/package.json):
 * - `writeToEngine` only loops `conn.write(part, opts)`; engine.io's `write` pushes the packet to
 *   `writeBuffer` and calls `flush()`, the prototype method shadowed here by an own no-op for the
 *   duration of the loop (removed in `finally`), then called once. A flush that finds the
 *   transport busy leaves the packets in `writeBuffer` for the drain, as before.
 * - `WebSocket.send(packets)` encodes and calls `ws.send` for every packet synchronously; ws's
 *   per-frame cork nests in ours (net.Socket counts corks); `uncork` in the `finally` writes the
 *   buffered frames before `send` returns.
 * Departure from stock: wraps a method of socket.io's `Client` (the only wrapper of it), shadows
 * engine.io's private session `flush`, and reads the TCP socket under engine.io's transport
 * (`socket._socket`). `probeBatchWrites` sends a packet through the installed classes at start.
 *
 * The session meter: bytes the Server holds for one client, counted from engine.io's own events, and a way to drop
 * that client at once, from engine.io / ws / Node internals (named below); the policy that uses it (bounds, stalls, metrics) is outbound.ts, which sees only `SessionMeter`.
 *
 * What is counted (socket.io 4.8, engine.io 6.6, ws 8.23, Node 20):
 * - engine.io's write buffer: its server `Socket` emits `packetCreate` right before it pushes a
 *   packet to `writeBuffer`, and `flush` when it hands the whole `writeBuffer` to the transport.
 *   A running counter adds each packet's bytes (a string's length, a Buffer's byteLength, a
 *   pre-encoded WebSocket frame's byteLength: socket.io's broadcasts) and moves them on `flush`.
 * - what the transport holds: a WebSocket transport takes one flush at a time and emits `drain`
 *   when ws has written the last frame of it to the TCP socket (its send callback); a polling
 *   flush is one HTTP response (`transport.res`), held until that response's `finish` or `close`.
 * No event walks a buffer: the hot path costs a few additions per packet.
 *
 * Progress (is anything leaving?) also reads, at sample time only, ws's `bufferedAmount` (public)
 * and the TCP handle's `writeQueueSize` (libuv's bytes not yet accepted by the kernel, as Node's
 * own socket timeout reads it), so a long frame that the kernel takes slowly still counts as
 * moving. A client that reads nothing moves none of them.
 *
 * `meterSession` returns null when engine.io's session does not have the shape this relies on
 * (another version): the caller logs it and test/server/transport-session-meter.test.ts fails.
 */
import { EventEmitter } from "node:events";
import {
  engineSessionPrototype,
  memoryWebSocket,
  probeWebSocketTransport,
  socketIoClient,
} from "./installed.ts";

interface Corkable {
  cork(): void;
  uncork(): void;
}

/** The parts of an engine.io WebSocket transport batched writes touch. */
interface SendingTransport {
  readonly name: string;
  send(packets: unknown[]): void;
  readonly socket?: { readonly _socket?: Corkable };
}

/** The parts of an engine.io server session (engine.io `Socket`). */
export interface BatchableSession {
  readonly transport: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
}

/** The parts of a socket.io server `Client` (one per engine.io session). */
interface SocketIoClient {
  readonly conn: { flush(): void };
  writeToEngine(encoded: unknown, opts: unknown): void;
}

const patched = new WeakSet<object>();
const noop = (): void => undefined;

/**
 * Batched writes act only on packets whose binary parts are at most this long (D102): they
 * save a chunk's fixed costs (a write, an event-loop turn), which decide at small chunks; at the
 * SDK's default 512 KiB the bytes do, and the Server runs socket.io and ws as shipped there.
 */
export const BATCHED_ATTACHMENT_MOST = 64 * 1024;

/** Whether every binary part among `parts` (or their `data`) is at most BATCHED_ATTACHMENT_MOST. */
function smallParts(parts: readonly unknown[]): boolean {
  for (const part of parts) {
    const v = typeof part === "object" && part !== null && "data" in part ? part.data : part;
    if (typeof v !== "string" && byteLength(v) > BATCHED_ATTACHMENT_MOST) return false;
  }
  return true;
}

/** Wraps `transport.send` of a WebSocket transport (once) so one flush is one write. */
export function corkSends(transport: unknown): boolean {
  const t = transport as SendingTransport | null;
  if (!t || t.name !== "websocket" || typeof t.send !== "function" || patched.has(t)) return false;
  patched.add(t);
  const send = t.send.bind(t);
  t.send = (packets: unknown[]): void => {
    const tcp = t.socket?._socket;
    if (!tcp || packets.length < 2 || !smallParts(packets)) return send(packets);
    tcp.cork();
    try {
      send(packets);
    } finally {
      tcp.uncork();
    }
  };
  return true;
}

/** Applies `corkSends` to a session's transport now and after an upgrade to WebSocket. */
export function corkSessionSends(session: BatchableSession): void {
  corkSends(session.transport);
  session.on("upgrade", (transport) => corkSends(transport));
}

/** Makes a socket.io `Client` write all parts of a packet before engine.io flushes (once). */
export function flushPacketsWhole(client: unknown): boolean {
  const c = client as SocketIoClient | null;
  const conn = c?.conn;
  if (!c || !conn || typeof c.writeToEngine !== "function" || patched.has(c)) return false;
  if (typeof conn.flush !== "function" || Object.hasOwn(conn, "flush")) return false;
  patched.add(c);
  const writeToEngine = c.writeToEngine.bind(c);
  c.writeToEngine = (encoded: unknown, opts: unknown): void => {
    if (!Array.isArray(encoded) || encoded.length < 2 || !smallParts(encoded)) {
      return writeToEngine(encoded, opts);
    }
    conn.flush = noop;
    try {
      writeToEngine(encoded, opts);
    } finally {
      delete (conn as { flush?: unknown }).flush;
    }
    conn.flush();
  };
  return true;
}

/**
 * Whether batched writes work with the installed socket.io, engine.io and ws: null, or why not.
 * A binary packet (a text part and an attachment) goes through socket.io's real
 * `Client.writeToEngine`, engine.io's session `write`/`flush` and WebSocket transport, and a real
 * ws WebSocket onto a socket in memory: with both wrappers on, its two frames must reach the
 * socket in one write, byte for byte what ws writes for them.
 */
export function probeBatchWrites(): string | null {
  const client = socketIoClient();
  if (typeof client === "string") return client;
  try {
    const { ws, socket } = memoryWebSocket();
    const transport = probeWebSocketTransport(ws);
    if (!transport) return "engine.io has no WebSocket transport";
    const session = Object.assign(Object.create(engineSessionPrototype) as object, {
      readyState: "open",
      writeBuffer: [],
      packetsFn: [],
      sentCallbackFn: [],
      transport,
      server: new EventEmitter(),
    });
    const io = Object.assign(Object.create(client) as object, { conn: session });
    if (!flushPacketsWhole(io) || !corkSends(transport)) {
      return "socket.io's Client or engine.io's WebSocket transport has changed shape";
    }
    const text = '451-/smcp,["probe",{"_placeholder":true,"num":0}]';
    const attachment = Buffer.from([1, 2, 3]);
    (io as unknown as SocketIoClient).writeToEngine([text, attachment], {});
    const expected = Buffer.concat([
      Buffer.from([0x81, 1 + text.length]),
      Buffer.from(`4${text}`),
      Buffer.from([0x82, attachment.length]),
      attachment,
    ]);
    const written = socket.writes.length === 1 ? Buffer.concat(socket.writes[0]!) : null;
    return written?.equals(expected)
      ? null
      : "the two frames of a packet did not reach the socket in one write, as ws frames them";
  } catch (err) {
    return `socket.io / engine.io / ws: ${(err as Error).message}`;
  }
}

/** A packet as engine.io's `packetCreate` / `flush` pass it. */
interface EnginePacket {
  type: string;
  data?: unknown;
  options?: { wsPreEncodedFrame?: unknown };
}

interface Destroyable {
  destroy(): void;
  readonly writableLength?: number;
  readonly _handle?: { readonly writeQueueSize?: unknown } | null;
}

/** The parts of an engine.io server transport read here. */
interface EngineTransport {
  readonly name: string;
  on(event: "drain", fn: () => void): unknown;
  /** WebSocket: ws's WebSocket. */
  readonly socket?: { readonly bufferedAmount?: number; terminate?(): void; _socket?: Destroyable };
  /** Polling: the pending GET and its response, and a POST being read. */
  readonly req?: { readonly socket?: Destroyable } | null;
  readonly res?: {
    readonly socket?: Destroyable | null;
    once(event: "finish" | "close", fn: () => void): unknown;
  } | null;
  readonly dataReq?: { readonly socket?: Destroyable } | null;
}

/** The parts of an engine.io server `Socket` (one session) read here. */
export interface MeteredSession {
  readonly id: string;
  readonly transport: unknown;
  readonly writeBuffer: unknown;
  on(event: "packetCreate", fn: (packet: EnginePacket) => void): unknown;
  on(event: "flush", fn: (packets: unknown) => void): unknown;
  on(event: "upgrade", fn: (transport: unknown) => void): unknown;
  on(event: "close", fn: (reason: string) => void): unknown;
  close(discard?: boolean): unknown;
}

export interface SessionMeter {
  /** Bytes queued for the client: engine.io's write buffer plus what its transport holds. */
  readonly queued: number;
  /** `websocket` or `polling` (the current transport). */
  readonly transport: string;
  /** Bytes handed to the kernel for the client since the session began (it took them). */
  readonly drained: number;
  /** A value that changes whenever queued bytes move toward the client (compare, don't order). */
  progress(): number;
  /**
   * Closes the connection now and discards what is queued (no close handshake to wait for). A
   * session closed by engine.io's ping timeout gets the same at its close.
   */
  drop(): void;
}

/** Bytes of one engine.io packet as it waits: its data, or its pre-encoded frame. */
export function packetBytes(packet: EnginePacket): number {
  const frame = packet.options?.wsPreEncodedFrame;
  if (frame !== undefined) return byteLength(frame);
  return byteLength(packet.data);
}

function byteLength(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return v.byteLength;
  if (Array.isArray(v)) {
    let n = 0;
    for (const part of v) n += byteLength(part);
    return n;
  }
  return 0;
}

function isSession(s: unknown): s is MeteredSession {
  const x = s as Partial<MeteredSession> | null;
  const t = x?.transport as Partial<EngineTransport> | undefined;
  return (
    typeof x?.on === "function" &&
    typeof x.close === "function" &&
    Array.isArray(x.writeBuffer) &&
    typeof t?.name === "string" &&
    typeof t.on === "function"
  );
}

/**
 * Starts counting `session`'s outbound bytes. `onDelta` hears every change of `queued` (so a
 * total across sessions is a running sum too); on close the session's bytes are given back.
 */
export function meterSession(
  session: unknown,
  onDelta: (delta: number) => void,
): SessionMeter | null {
  if (!isSession(session)) return null;
  let inBuffer = 0;
  let inTransport = 0;
  let drained = 0;
  let closed = false;
  /** WebSocket flushes handed to ws, oldest first (engine.io sends one at a time). */
  const wsBatches: number[] = [];
  /** Polling responses still being written, by the socket that holds them. */
  const pollSockets = new Set<Destroyable>();
  const watched = new WeakSet<object>();
  const transport = (): EngineTransport => session.transport as EngineTransport;

  const settle = (bytes: number): void => {
    if (closed) return;
    inTransport -= bytes;
    drained += bytes;
    onDelta(-bytes);
  };
  const watchTransport = (t: EngineTransport): void => {
    if (watched.has(t)) return;
    watched.add(t);
    if (t.name !== "websocket") return;
    t.on("drain", () => {
      if (t === transport()) settle(wsBatches.shift() ?? 0);
    });
  };
  watchTransport(transport());

  session.on("packetCreate", (packet) => {
    if (closed) return;
    const n = packetBytes(packet);
    inBuffer += n;
    onDelta(n);
  });
  session.on("flush", () => {
    if (closed) return;
    const batch = inBuffer;
    inBuffer = 0;
    inTransport += batch;
    const t = transport();
    if (t.name === "websocket") return void wsBatches.push(batch);
    const res = t.res;
    if (!res) return settle(batch);
    const socket = res.socket ?? undefined;
    if (socket) pollSockets.add(socket);
    let done = false;
    const finished = (): void => {
      if (done) return;
      done = true;
      if (socket) pollSockets.delete(socket);
      settle(batch);
    };
    res.once("finish", finished);
    res.once("close", finished);
  });
  // Polling flushes still out when the session upgrades finish on their own responses.
  session.on("upgrade", (t) => watchTransport(t as EngineTransport));
  // ws: destroy the TCP socket now (close() would queue a close frame behind the backlog and
  // wait up to 30 s for the peer's). Polling: the sockets of every response still out.
  const destroySockets = (): void => {
    const t = transport();
    if (typeof t.socket?.terminate === "function") t.socket.terminate();
    for (const socket of [...pollSockets, t.req?.socket, t.dataReq?.socket]) socket?.destroy();
  };
  session.on("close", (reason) => {
    if (closed) return;
    // engine.io's own ping timeout closes politely; a peer that stopped answering gets no grace.
    if (reason === "ping timeout") destroySockets();
    closed = true;
    onDelta(-(inBuffer + inTransport));
    inBuffer = inTransport = 0;
    wsBatches.length = 0;
    pollSockets.clear();
  });

  return {
    get queued() {
      return inBuffer + inTransport;
    },
    get transport() {
      return transport().name;
    },
    get drained() {
      return drained;
    },
    progress() {
      const t = transport();
      const ws = t.name === "websocket" ? t.socket : undefined;
      const buffered = ws?.bufferedAmount ?? 0;
      const unsent = Number(ws?._socket?._handle?.writeQueueSize ?? 0) || 0;
      return drained - buffered - unsent;
    },
    drop() {
      destroySockets();
      session.close(true);
    },
  };
}
