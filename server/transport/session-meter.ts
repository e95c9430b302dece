/**
 * Bytes the Server holds for one client, counted from engine.io's own events, and a way to drop
 * that client at once. Everything here reads engine.io / ws / Node internals (named below); the
 * policy that uses it (bounds, stalls, metrics) is outbound.ts, which sees only `SessionMeter`.
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
