/**
 * How the Computer's answers leave its one socket: the only code that reads or changes the
 * internals of socket.io-client, engine.io-client and ws. The rest of the Computer sees
 * `AnswerTransport`: how many answer bytes the socket still holds unsent (`unsentBytes`, with
 * `onWritable` when that may have dropped), which the dispatcher's chunk scheduler bounds (D47).
 *
 * One fast path, probed at start on the installed libraries' real classes (a packet through a
 * real Manager and engine.io Socket) and kept only where the measurements in docs/decisions.md
 * (D49, D102, D118) show it pays:
 * - `batch_writes`: a binary answer is one socket.io packet in two engine.io packets (the text
 *   part and its attachment). Stock, engine.io-client flushes after each: the attachment waits for
 *   the transport's next-tick drain and ws writes each frame on its own. Here the Manager writes
 *   every part before one flush and the WebSocket transport's write runs with the TCP socket
 *   corked: same bytes, same frames, one `writev`. Only for chunks of at most
 *   `BATCHED_ATTACHMENT_MOST` (64 KiB), where a chunk's fixed costs decide; larger answers go out
 *   as the libraries send them.
 * `transport: "stock"` (`--stock-transport`) runs every library exactly as shipped, and
 * `transport: { off: [name] }` the default without the named paths. A live object
 * that lacks what the probe could not see turns its path `unavailable` from then on.
 *
 * The unsent-bytes reading is not a fast path (the scheduler needs it in both modes): the
 * engine's `writeBuffer` packets not yet handed to the transport (all of them on polling, where
 * the POST in flight holds them) plus ws's `bufferedAmount` (bytes ws or the net.Socket have not
 * handed to the kernel). Wake-ups come from the engine's `drain`/`flush` and the net.Socket's
 * `drain`; where that socket cannot be found, the scheduler's re-check timer covers it.
 */
import type { Logger } from "pino";
import type { Gauge } from "prom-client";
import { NodeWebSocket, Socket as EngineSocket } from "engine.io-client";
import { Manager } from "socket.io-client";
import type { Transport } from "@a2c-smcp/protocol";

export type FastPathName = "batch_writes";

/**
 * `"fast"` (default): every fast path the installed libraries support; `"stock"`: none; `{ off }`:
 * the default without the named ones (the bench's transport section measures each one's gain
 * that way). The same shape as the Server's option.
 */
export type TransportMode = "fast" | "stock" | { readonly off: readonly FastPathName[] };
export type FastPathState = "on" | "off" | `unavailable: ${string}`;
export type FastPathReport = Record<FastPathName, FastPathState>;

/** Each fast path with its probe: why it cannot work with the installed libraries, or null. */
export const FAST_PATHS: ReadonlyArray<{ name: FastPathName; probe(): string | null }> = [
  { name: "batch_writes", probe: () => probeBatchWrites() },
];

/** Whether `mode` asks for `name`. */
export function wants(mode: TransportMode, name: FastPathName): boolean {
  if (mode === "fast") return true;
  if (mode === "stock") return false;
  return !mode.off.includes(name);
}

/** Each path's state for `mode`, probing the wanted ones (`probe` replaces the real probes). */
export function decideFastPaths(
  mode: TransportMode,
  probe: (name: FastPathName) => string | null = probeOnce,
): FastPathReport {
  const report = {} as FastPathReport;
  for (const { name } of FAST_PATHS) {
    const reason = wants(mode, name) ? probe(name) : undefined;
    report[name] = reason === undefined ? "off" : reason === null ? "on" : `unavailable: ${reason}`;
  }
  return report;
}

const probed = new Map<FastPathName, string | null>();

function probeOnce(name: FastPathName): string | null {
  if (!probed.has(name)) {
    let reason: string | null;
    try {
      reason = FAST_PATHS.find((p) => p.name === name)!.probe();
    } catch (err) {
      reason = `probe failed (${(err as Error).message})`;
    }
    probed.set(name, reason);
  }
  return probed.get(name)!;
}

export interface AnswerTransport {
  /** Each fast path's state, as of now. */
  readonly report: FastPathReport;
  /** The engine.io transport in use (binary over polling travels base64'd). */
  readonly engineTransport: () => Transport;
  /** Answer bytes handed to the socket that it has not yet handed to the kernel. */
  unsentBytes(): number;
  /** `listener` runs whenever the unsent bytes may have dropped. */
  onWritable(listener: () => void): void;
}

/** The parts of engine.io-client's Socket (`manager.engine`) the transport reads. */
interface ClientEngine {
  readonly transport?: unknown;
  readonly writeBuffer?: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
  on(event: "drain" | "flush" | "close", listener: () => void): unknown;
}

/** The parts of socket.io-client's Manager (`socket.io`) the transport reads. */
export interface ClientManager {
  readonly engine?: ClientEngine;
  on(event: "open", listener: () => void): unknown;
}

interface NetSocket {
  cork(): void;
  uncork(): void;
  on(event: "drain", listener: () => void): unknown;
}

/** engine.io-client's WebSocket transport, as far as the transport reads it. */
interface WsTransport {
  readonly name?: unknown;
  write(packets: unknown[]): void;
  readonly ws?: {
    readonly bufferedAmount?: unknown;
    readonly _socket?: NetSocket | null;
  } | null;
}

/** The transport of `manager` (the Computer's socket.io-client Manager) in `mode`. */
export function createAnswerTransport(
  manager: ClientManager,
  options: { mode?: TransportMode; log?: Logger; gauge?: Gauge<"name" | "state"> } = {},
): AnswerTransport {
  const report = decideFastPaths(options.mode ?? "fast");
  const { log, gauge } = options;
  const labels = (name: FastPathName): { name: FastPathName; state: string } => ({
    name,
    state: report[name].startsWith("unavailable") ? "unavailable" : report[name],
  });
  for (const { name } of FAST_PATHS) gauge?.set(labels(name), report[name] === "on" ? 1 : 0);
  log?.info({ fastPaths: { ...report } }, "transport");
  const unavailable = (name: FastPathName, reason: string): void => {
    if (report[name] !== "on") return;
    gauge?.remove(labels(name));
    report[name] = `unavailable: ${reason}`;
    gauge?.set(labels(name), 0);
    log?.warn({ fastPath: name, reason }, "fast path unavailable; stock behaviour from now");
  };

  const listeners: Array<() => void> = [];
  const writable = (): void => {
    for (const listener of listeners) listener();
  };
  const batch = report.batch_writes === "on";
  if (batch) flushPacketsWhole(manager);
  let noNetSocket = false;

  manager.on("open", () => {
    const engine = manager.engine;
    if (!engine) return;
    engine.on("drain", writable);
    engine.on("flush", writable);
    const onTransport = (t: unknown): void => {
      if ((t as WsTransport | null)?.name !== "websocket") return;
      const ws = t as WsTransport;
      const tcp = ws.ws?._socket;
      if (typeof tcp?.on === "function") tcp.on("drain", writable);
      else if (!noNetSocket) {
        noNetSocket = true;
        log?.warn("the WebSocket transport's TCP socket was not found; unsent bytes re-checked");
      }
      if (batch) {
        const reason = corkWrites(ws);
        if (reason) unavailable("batch_writes", reason);
      }
    };
    onTransport(engine.transport);
    engine.on("upgrade", onTransport);
  });

  return {
    report,
    engineTransport: () =>
      (manager.engine?.transport as WsTransport | undefined)?.name === "websocket"
        ? "websocket"
        : "polling",
    unsentBytes: () => unsentOf(manager.engine),
    onWritable(listener) {
      listeners.push(listener);
    },
  };
}

/** See the header: engine packets not yet handed over, plus what ws and its socket hold. */
function unsentOf(engine: ClientEngine | undefined): number {
  if (!engine) return 0;
  const t = engine.transport as WsTransport | undefined;
  const onWs = t?.name === "websocket";
  let n = 0;
  const packets = engine.writeBuffer;
  if (Array.isArray(packets)) {
    // Packets before `_prevBufferLen` were handed to the transport and are counted by ws.
    const prev = (engine as { _prevBufferLen?: unknown })._prevBufferLen;
    const handed = onWs && typeof prev === "number" ? prev : 0;
    for (let i = handed; i < packets.length; i++) {
      n += 1 + byteLength((packets[i] as { data?: unknown } | undefined)?.data);
    }
  }
  if (onWs) {
    const amount = t.ws?.bufferedAmount;
    if (typeof amount === "number") n += amount;
  }
  return n;
}

function byteLength(data: unknown): number {
  if (typeof data === "string") return data.length;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return data.byteLength;
  return 0;
}

// ---- batch_writes -------------------------------------------------------------------------

const patched = new WeakSet<object>();
const noop = (): void => undefined;

/**
 * Batched writes act only on answers whose binary parts are at most this long (D102): they
 * save a chunk's fixed costs (a flush, a write), which decide at small chunks; at the SDK's
 * default 512 KiB the bytes do, and the client libraries run as shipped there.
 */
export const BATCHED_ATTACHMENT_MOST = 64 * 1024;

/** Whether `blob` (an answer's) is no binary part longer than BATCHED_ATTACHMENT_MOST. */
function smallBlob(blob: unknown): boolean {
  return !(ArrayBuffer.isView(blob) && blob.byteLength > BATCHED_ATTACHMENT_MOST);
}

/** Whether no engine.io packet among `packets` carries more than BATCHED_ATTACHMENT_MOST bytes. */
function smallPackets(packets: readonly unknown[]): boolean {
  return packets.every((p) => smallBlob((p as { data?: unknown } | null)?.data));
}

/**
 * Makes `manager` hand every part of a packet to its engine before one flush: `_packet` encodes
 * and loops `engine.write(part)`, whose `flush()` (the prototype's) is shadowed by an own no-op
 * for the loop and called once after it.
 */
function flushPacketsWhole(manager: ClientManager): void {
  const m = manager as ClientManager & { _packet: (packet: unknown) => void };
  if (patched.has(m)) return;
  patched.add(m);
  const packet = m._packet.bind(m);
  m._packet = (p: unknown): void => {
    const engine = m.engine as unknown as { flush: () => void } | undefined;
    const answer = (p as { data?: unknown[] } | null)?.data?.[0] as { blob?: unknown } | undefined;
    if (
      !engine ||
      typeof engine.flush !== "function" ||
      Object.hasOwn(engine, "flush") ||
      !smallBlob(answer?.blob)
    ) {
      return packet(p);
    }
    engine.flush = noop;
    try {
      packet(p);
    } finally {
      delete (engine as { flush?: unknown }).flush;
    }
    engine.flush();
  };
}

/** Wraps `write` of a WebSocket transport so one flush is one TCP write; a reason when it cannot. */
function corkWrites(t: WsTransport): string | undefined {
  if (patched.has(t)) return undefined;
  if (typeof t.write !== "function") return "the WebSocket transport has no write method";
  if (typeof t.ws?._socket?.cork !== "function") return "the WebSocket transport has no TCP socket";
  patched.add(t);
  const write = t.write.bind(t);
  (t as { write: (packets: unknown[]) => void }).write = (packets) => {
    const socket = t.ws?._socket;
    if (!socket || packets.length < 2 || !smallPackets(packets)) return write(packets);
    socket.cork();
    try {
      write(packets);
    } finally {
      socket.uncork();
    }
  };
  return undefined;
}

/**
 * Behaviour on the real classes: a binary ack through a real Manager (its encoder) into a real
 * engine.io Socket must reach the transport as one send of both parts with the Manager patched,
 * and the real WebSocket transport's write must call `ws.send` for every packet before it
 * returns (so a cork around it covers them all).
 */
function probeBatchWrites(): string | null {
  const manager = new Manager("http://127.0.0.1:1", { autoConnect: false });
  const sends: number[] = [];
  const engine = Object.assign(Object.create(EngineSocket.prototype) as object, {
    readyState: "open",
    writeBuffer: [],
    _prevBufferLen: 0,
    upgrading: false,
    transport: { name: "websocket", writable: true, send: (p: unknown[]) => sends.push(p.length) },
    emitReserved: noop,
  });
  (manager as unknown as { engine: unknown }).engine = engine;
  flushPacketsWhole(manager);
  (manager as unknown as { _packet(p: unknown): void })._packet({
    type: 3, // ACK with a Buffer: BINARY_ACK, two engine.io packets
    nsp: "/smcp",
    id: 1,
    data: [{ blob: Buffer.alloc(8) }],
  });
  if (sends.length !== 1 || sends[0] !== 2) {
    return `a binary ack reached the engine.io transport as sends of ${JSON.stringify(sends)}, not one send of 2 packets`;
  }
  const order: string[] = [];
  const t = Object.assign(Object.create(NodeWebSocket.prototype) as object, {
    supportsBinary: true,
    opts: {},
    emitReserved: noop,
    setTimeoutFn: setTimeout,
    ws: {
      send: () => order.push("send"),
      _socket: { cork: () => order.push("cork"), uncork: () => order.push("uncork"), on: noop },
    },
  }) as unknown as WsTransport;
  corkWrites(t);
  t.write([
    { type: "message", data: "x" },
    { type: "message", data: Buffer.alloc(1) },
  ]);
  if (order.join() !== "cork,send,send,uncork") {
    return `the WebSocket transport's write ran ${order.join(",")}, not both sends inside one cork`;
  }
  return null;
}
