/**
 * The Agent's transport: how its requests leave its one socket and their acks come back. The
 * acks it waits for are kept in one table (`AckTable`) with their deadlines and abort signals;
 * its one departure from stock socket.io-client sits behind one switch
 * (`AgentClientOptions.transport`, the CLI's `--stock-transport`), as the Server's and the
 * Computer's transports are theirs.
 *
 * `upload_text`: a base64 `client:put_blob` chunk of this SDK's uploads is written as
 * socket.io-parser writes it, but built around its `blob` instead of through JSON.stringify of the
 * whole payload: the payload's other fields are stringified with an empty `blob`, and the base64
 * text is put between its quotes. Base64 holds no character JSON escapes, so the text is byte for
 * byte what the stock Encoder writes (the probe compares the two at start); what it spares is
 * JSON.stringify's scan and copy of every chunk's base64 (a quarter of the Agent's CPU per MB of a
 * base64 upload). Every other packet, a caller's own `blob` string included, goes through
 * socket.io-parser as is.
 *
 * Departure from stock: a custom parser is a public socket.io-client option (`parser`); nothing
 * private is read. The Decoder is socket.io-parser's own.
 */
import { Decoder, Encoder, PacketType, protocol, type Packet } from "socket.io-parser";
import { Events, writePacketHeader } from "@a2c-smcp/protocol";
import { randomBytes } from "node:crypto";
import type { Socket } from "socket.io-client";
import { DisconnectedError, RequestTimeoutError, abortError, asError } from "./errors.ts";

/** `"fast"` (default): every fast path the installed libraries support; `"stock"`: none. */
export type AgentTransport = "fast" | "stock";

export type FastPathState = "on" | "off" | `unavailable: ${string}`;

/**
 * The fast paths, each with the probe that checks, on the installed library, the behaviour it
 * relies on (null: it holds; else why not). The same shape as the Server's and the Computer's.
 */
const FAST_PATHS = [{ name: "upload_text", probe: () => probeUploadText() }] as const;

export type AgentFastPathName = (typeof FAST_PATHS)[number]["name"];

/** The names of this transport's fast paths: what the bench's transport section runs without. */
export const AGENT_FAST_PATH_NAMES: readonly AgentFastPathName[] = FAST_PATHS.map((p) => p.name);

/** What each fast path of this client is doing (`AgentClient.fastPaths`). */
export type AgentFastPaths = Readonly<Record<AgentFastPathName, FastPathState>>;

/** The stringified empty `blob` the base64 is put into (its closing quote is where it goes). */
const EMPTY_BLOB = '"blob":""';

/**
 * Payloads whose `blob` this SDK encoded from bytes (`Buffer#toString("base64")`): base64 holds
 * no character JSON.stringify escapes, so their text can be built around it unchecked. Any other
 * payload (a caller's own string) is the stock Encoder's to write.
 */
const BASE64_PAYLOADS = new WeakSet<object>();

/** Marks `payload` as carrying base64 this SDK encoded (`upload-wire.ts`). */
export function markBase64Payload(payload: object): void {
  BASE64_PAYLOADS.add(payload);
}

/** The text of a put_blob event packet as the stock Encoder writes it, or null to let it. */
function uploadText(packet: Packet): string | null {
  const data: unknown = packet.data;
  if (packet.type !== PacketType.EVENT || !Array.isArray(data) || data.length !== 2) return null;
  const payload = data[1] as { blob?: unknown } | null;
  if (data[0] !== Events.PutBlob || payload === null || !BASE64_PAYLOADS.has(payload)) return null;
  const blob = payload.blob;
  if (typeof blob !== "string") return null;
  const text = JSON.stringify([Events.PutBlob, { ...payload, blob: "" }]);
  // Keys keep their order and the SDK's payloads are flat (putPayload), so the first
  // `"blob":""` outside a string is the payload's own: a quote inside a string is escaped.
  const at = text.indexOf(EMPTY_BLOB);
  if (at < 0) return null;
  const cut = at + EMPTY_BLOB.length - 1;
  const head = writePacketHeader(PacketType.EVENT, packet.nsp, packet.id);
  return head + text.slice(0, cut) + blob + text.slice(cut);
}

export class UploadTextEncoder extends Encoder {
  override encode(packet: Packet): unknown[] {
    const text = uploadText(packet);
    return text === null ? (super.encode(packet) as unknown[]) : [text];
  }
}

/**
 * Whether the installed socket.io-parser writes a put_blob chunk as `UploadTextEncoder` does:
 * null, or why not. Chunks with every optional field, strings that need escapes beside the
 * base64, and a packet without an id go through both Encoders.
 */
export function probeUploadText(): string | null {
  try {
    const stock = new Encoder();
    const ours = new UploadTextEncoder();
    const blob = Buffer.from("probe \u00ff bytes").toString("base64");
    const samples: Packet[] = [
      {
        type: PacketType.EVENT,
        nsp: "/smcp",
        id: 7,
        data: [
          Events.PutBlob,
          {
            agent: 'a"blob":""',
            req_id: "r\u00e9\n",
            computer: "c",
            chunk_offset: 0,
            eof: false,
            total_size: 12,
            sha256: "ab".repeat(32),
            name_hint: "x\\y",
            blob,
            blob_format: "base64",
          },
        ],
      },
      { type: PacketType.EVENT, nsp: "/", data: [Events.PutBlob, { blob, eof: true }] },
    ];
    for (const packet of samples) {
      markBase64Payload((packet.data as object[])[1]!);
      const want = stock.encode(packet);
      const got = ours.encode(packet);
      if (got.length !== 1 || want.length !== 1 || got[0] !== want[0]) {
        return "socket.io-parser writes a put_blob chunk differently";
      }
    }
    return null;
  } catch (err) {
    return `socket.io-parser: ${(err as Error).message}`;
  }
}

/** The fast paths for `transport`, probed on the installed socket.io-parser. */
export function decideFastPaths(transport: AgentTransport = "fast"): AgentFastPaths {
  const paths = {} as Record<AgentFastPathName, FastPathState>;
  for (const { name, probe } of FAST_PATHS) {
    if (transport === "stock") {
      paths[name] = "off";
      continue;
    }
    // The installed library does not change while the process runs: each probe runs once.
    const missing = (probed[name] ??= { missing: probe() }).missing;
    paths[name] = missing === null ? "on" : `unavailable: ${missing}`;
  }
  return paths;
}

const probed: Partial<Record<AgentFastPathName, { missing: string | null }>> = {};

/** socket.io-client options for `paths`: its `parser` when a fast path needs one. */
export function socketOptions(paths: AgentFastPaths): { parser?: unknown } {
  if (paths.upload_text !== "on") return {};
  return { parser: { protocol, PacketType, Encoder: UploadTextEncoder, Decoder } };
}

// ---------------------------------------------------------------------------------------------
// Requests on the socket

/** How one client's requests travel on its socket: `req_id`s, the emit and the ack waited for. */
export class RequestWire {
  /** The connection's socket (set and cleared by the connection). */
  socket: Socket | undefined;
  /** Requests waiting for their ack (local deadlines, abort signals). */
  readonly acks = new AckTable();
  private readonly reqPrefix = randomBytes(6).toString("base64url");
  private reqCounter = 0;

  constructor(
    /** Local ack wait for `client:get_*` / `server:*`, ms. */
    readonly requestTimeoutMs: number,
  ) {}

  /** A fresh, never reused request id: random per client + counter. */
  nextReqId(): string {
    this.reqCounter++;
    return `${this.reqPrefix}-${this.reqCounter}`;
  }

  /**
   * Emits `event` and settles with `answer(ack arguments)`, computed inside socket.io's ack
   * callback (a throw rejects): one promise per request, whatever the answer's checks. Rejects at
   * once with `DisconnectedError` when not connected.
   */
  request<T>(
    event: string,
    payload: unknown,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    answer: (args: unknown[]) => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const socket = this.socket;
      if (!socket?.connected) return reject(new DisconnectedError());
      if (signal?.aborted) return reject(abortError(signal));
      const pending = this.acks.add(event, timeoutMs, signal, resolve, reject);
      socket.emit(event, payload, this.onAck(pending, answer));
    });
  }

  /**
   * The ack callback of one request, made outside `request` so that it does not hold the
   * request's payload (an upload chunk's base64) for the round trip it waits.
   */
  private onAck<T>(pending: PendingAck<T>, answer: (args: unknown[]) => T) {
    return (...args: unknown[]): void => {
      if (!this.acks.take(pending)) return; // timed out / aborted / disconnected meanwhile
      let value: T;
      try {
        value = answer(args);
      } catch (err) {
        return pending.reject(asError(err));
      }
      pending.resolve(value);
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The acks a connection waits for

const settledAlready = (): void => undefined;

/**
 * One request waiting for its ack. Settled exactly once: by the ack, a failure or an abort; then
 * it lets go of its promise's callbacks (a resolved promise holds its value: a whole chunk).
 */
export class PendingAck<T> {
  settled = false;
  constructor(
    readonly event: string,
    readonly timeoutMs: number,
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
    private onResolve: (value: T) => void,
    private onReject: (err: Error) => void,
  ) {}

  resolve(value: T): void {
    const f = this.onResolve;
    this.release();
    f(value);
  }
  reject(err: Error): void {
    const f = this.onReject;
    this.release();
    f(err);
  }
  private release(): void {
    this.onResolve = settledAlready;
    this.onReject = settledAlready;
  }
}

/**
 * Every pending ack of one connection, each with its own deadline and abort signal, without a
 * timer or an abort listener per request: a pull sends hundreds of chunk requests a second, and a
 * Node timer plus an `AbortSignal` listener cost more per request than the rest of the Agent's
 * bookkeeping together. One timer is armed for the earliest deadline and re-armed only when a
 * request with an earlier one arrives (a pull's deadlines follow its round trips, so they differ
 * per request); requests with the same signal (a pull's) share one listener on it.
 */
export class AckTable {
  private readonly pending = new Set<PendingAck<never>>();
  private readonly bySignal = new WeakMap<AbortSignal, SignalGroup>();
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for (Infinity when none). */
  private armedFor = Number.POSITIVE_INFINITY;

  /** Registers a request; it fails by itself at its deadline or when `signal` aborts. */
  add<T>(
    event: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    resolve: (value: T) => void,
    reject: (err: Error) => void,
  ): PendingAck<T> {
    const deadline = performance.now() + timeoutMs;
    const p = new PendingAck<T>(event, timeoutMs, deadline, signal, resolve, reject);
    const q = p as unknown as PendingAck<never>;
    this.pending.add(q);
    if (deadline < this.armedFor) this.arm(deadline);
    if (signal) this.watch(signal, q);
    return p;
  }

  /** Takes `p` out of the table; false when it was already settled (timed out, aborted). */
  take<T>(p: PendingAck<T>): boolean {
    if (p.settled) return false;
    this.forget(p);
    return true;
  }

  /** Rejects every pending request (our socket dropped, or the client closed). */
  failAll(err: Error): void {
    for (const p of [...this.pending]) this.fail(p, err);
  }

  /** Stops the timer (the client closed). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  private arm(deadline: number): void {
    clearTimeout(this.timer);
    this.armedFor = deadline;
    // Never keeps the process alive on its own: the socket does while requests are pending.
    const ms = Math.max(1, Math.ceil(deadline - performance.now()));
    this.timer = setTimeout(() => this.expire(), ms).unref();
  }

  /** Fails every request past its deadline and arms the timer for the earliest one left. */
  private expire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const p of [...this.pending]) {
      if (p.deadline <= now) this.fail(p, new RequestTimeoutError(p.event, p.timeoutMs));
      else if (!p.settled) next = Math.min(next, p.deadline);
    }
    if (next < this.armedFor && this.pending.size > 0) this.arm(next);
  }

  private fail(p: PendingAck<never>, err: Error): void {
    if (p.settled) return;
    this.forget(p);
    p.reject(err);
  }

  private forget(p: PendingAck<never>): void {
    p.settled = true;
    this.pending.delete(p);
    if (p.signal) this.bySignal.get(p.signal)?.leave(p);
  }

  /** One listener per signal while any of its requests is pending. */
  private watch(signal: AbortSignal, p: PendingAck<never>): void {
    let group = this.bySignal.get(signal);
    if (!group) {
      group = new SignalGroup(
        signal,
        (x, err) => this.fail(x, err),
        () => this.bySignal.delete(signal),
      );
      this.bySignal.set(signal, group);
    }
    group.join(p);
  }
}

/** The pending requests of one signal, and the one abort listener they share. */
class SignalGroup {
  private readonly members = new Set<PendingAck<never>>();
  private readonly onAbort = (): void => {
    this.dispose();
    const err = abortError(this.signal);
    for (const p of [...this.members]) this.fail(p, err);
  };

  constructor(
    private readonly signal: AbortSignal,
    private readonly fail: (p: PendingAck<never>, err: Error) => void,
    private readonly dispose: () => void,
  ) {
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  join(p: PendingAck<never>): void {
    this.members.add(p);
  }

  leave(p: PendingAck<never>): void {
    this.members.delete(p);
    if (this.members.size > 0 || this.signal.aborted) return;
    this.signal.removeEventListener("abort", this.onAbort);
    this.dispose();
  }
}
