/**
 * What the Server holds for any one client is bounded (docs/configuration.md, "Outbound bounds").
 *
 * Every connection's outbound bytes are counted (the transport's session meter,
 * transport/session-writes.ts: engine.io's write buffer plus what its transport holds). For each
 * request the relay forwards, `reserve` sets aside the most its answer can take (`answerReserve`),
 * and refuses the request with a flat `busy` naming the bound (`details.limit`) when:
 * - `maxQueuedBytes` per connection: queued + reserved bytes of the connection would exceed it;
 * - `maxUnreadBytes` per connection, for `client:get_blob`: the bytes queued for the client (its
 *   answers that arrived and that it has not read) exceed what it took in the last second by that
 *   much (capped at `maxQueuedBytes`). Only unread bytes count (D52): a reservation is an answer
 *   that has not arrived, so a Computer that answers slowly never makes a reading Agent look like
 *   a non-reader. Reservations are bounded by `maxQueuedBytes`, the in-flight cap per Agent and
 *   the relay timeout. A client that stops reading is held to `maxUnreadBytes` of answers plus
 *   what its requests in flight bring, so the Server's work for what it will never take stays
 *   small (a refusal costs next to nothing);
 * - `maxQueuedBytesTotal` across connections, the same way as the first;
 * - `maxUnreadBytes` per Computer connection, for `client:put_blob` (`reserveUpload`): the upload
 *   chunks forwarded to that Computer and not answered yet (in the Server's queue, on the wire,
 *   or read and not yet written by the Computer). An Agent that sends faster than the Computer
 *   takes them gets `busy` (`upload_bytes_in_flight`) instead of the Server, or the Computer,
 *   holding whatever it sends. For a Computer on another node the bound applies to what this
 *   node forwarded to it (`remoteUploadTarget`, D107).
 * A connection that has bytes queued and moves none of them for `stallMs`, or stays over its
 * bound for `stallMs`, is dropped: its socket is destroyed and what it held is freed at once. The
 * Computer-side relay never waits on an Agent: answers go to the Agent's queue, whose growth the
 * reservations bound, so one slow Agent costs the others nothing but its bounded memory.
 * A pong nobody asked for (namespace.ts) drops a connection the same way. Every refusal and drop is
 * counted (`a2c_limit_refusals_total{limit}`, `a2c_disconnects_total{reason}`) and logged.
 */
import { Gauge, type Registry } from "prom-client";
import {
  base64Length,
  chunkEnvelopeBound,
  Events,
  type ClientEvent,
  type ErrorPayload,
} from "@a2c-smcp/protocol";
import { limitRefusal, type LimitMetrics, type QueuedLimit } from "./limits.ts";
import type { Logger } from "./log.ts";
import type { MeteredSession, SessionMeter } from "./transport/index.ts";

export interface OutboundOptions {
  /** Queued + reserved bytes of one connection before its requests are refused busy; 0 = off. */
  maxQueuedBytes: number;
  /** The same across every connection of this Server; 0 = off. */
  maxQueuedBytesTotal: number;
  /** Unread bytes (queued for the client) beyond what it took in the last second; 0 = off. */
  maxUnreadBytes: number;
  /** Drop a connection whose queued bytes do not move, or stay over its bound, this long; 0 = never. */
  stallMs: number;
}

/** `startServer`'s bounds when none are given (docs/configuration.md, "Outbound bounds"). */
export const OUTBOUND_DEFAULTS: OutboundOptions = {
  maxQueuedBytes: 64 * 1024 * 1024,
  maxQueuedBytesTotal: 512 * 1024 * 1024,
  maxUnreadBytes: 8 * 1024 * 1024,
  stallMs: 30_000,
};

export type DropReason = "outbound_stalled" | "outbound_over_bound" | "unsolicited_pong";

/** One connection as the guard keeps it. */
export interface OutboundAccount {
  readonly sid: string;
  readonly meter: SessionMeter | null;
  /** Bytes reserved for answers of requests in flight from this connection. */
  reserved: number;
  /** Bytes of `client:put_blob` chunks forwarded to this connection and not answered yet. */
  uploading: number;
}

/** What gives a reservation back (idempotent), or the bound that refused it. */
export type Reservation = { release: () => void } | { refused: QueuedLimit; answer: ErrorPayload };

interface Account extends OutboundAccount {
  readonly session: MeteredSession;
  lastProgress: number;
  /** Two marks of the meter's `drained`, half a second apart at least: what it took lately. */
  drainMarkAt: number;
  drainMark: number;
  drainMarkBefore: number;
  movedAt: number;
  overSince: number | undefined;
  refusedSinceLog: number;
  lastLogAt: number;
  dropped: boolean;
}

const MiB = 1024 * 1024;
const NOTHING_RESERVED: Reservation = { release: () => undefined };
/** One WARNING per connection per this interval while its requests keep being refused. */
const LOG_EVERY_MS = 10_000;

/** What an upload's ack may take in the Agent's queue: ids, an offset, a digest, a path. */
const UPLOAD_ACK_BYTES = 8 * 1024;

/**
 * The most a request's answer can take in the Agent's queue: a `get_blob` asking for
 * `max_chunk_bytes` gets at most that chunk (base64: 4/3 of it, unless binary over WebSocket)
 * plus an envelope; anything else may be as large as the Server lets a Computer send.
 */
export function answerReserve(
  event: ClientEvent,
  payload: unknown,
  maxHttpBufferSize: number,
  transport: string | undefined,
): number {
  // An upload's ack is small: ids, an offset, a digest and the landing path.
  if (event === Events.PutBlob) return Math.min(maxHttpBufferSize, UPLOAD_ACK_BYTES);
  if (event === Events.GetBlob && typeof payload === "object" && payload !== null) {
    const p = payload as {
      max_chunk_bytes?: unknown;
      blob_format?: unknown;
      blob_handle?: unknown;
      req_id?: unknown;
    };
    const asked = p.max_chunk_bytes;
    if (typeof asked === "number" && asked > 0 && asked < maxHttpBufferSize) {
      const raw = p.blob_format === "binary" && transport === "websocket";
      const carried = raw ? asked : base64Length(asked);
      const envelope = chunkEnvelopeBound({
        blob_handle: typeof p.blob_handle === "string" ? p.blob_handle : "",
        req_id: typeof p.req_id === "string" ? p.req_id : "",
      });
      return Math.min(maxHttpBufferSize, carried + envelope);
    }
  }
  return maxHttpBufferSize;
}

/** What a refusal's warning reads of a connection, a local one or another node's. */
type Warned = OutboundAccount & Pick<Account, "refusedSinceLog" | "lastLogAt">;

export class OutboundGuard {
  readonly #accounts = new Map<object, Account>();
  /** Upload chunks this node forwarded to Computer sockets on other nodes, by sid (D107). */
  readonly #remoteUploads = new Map<string, Warned>();
  readonly #timer: NodeJS.Timeout | undefined;
  #queued = 0;
  #reserved = 0;
  #warnedUnmetered = false;

  constructor(
    readonly options: OutboundOptions,
    registry: Registry,
    private readonly limitMetrics: LimitMetrics,
    private readonly logger: Logger,
    /** Counts one session's outbound bytes (the transport's `meter`); null: it cannot. */
    private readonly meterSession: (
      session: unknown,
      onDelta: (delta: number) => void,
    ) => SessionMeter | null,
  ) {
    const registers = [registry];
    const accounts = this.#accounts;
    const totals = (): number => this.#queued;
    new Gauge({
      name: "a2c_outbound_queued_bytes",
      help: "Bytes queued for clients across every connection (engine.io write buffers and transports)",
      registers,
      collect() {
        this.set(totals());
      },
    });
    new Gauge({
      name: "a2c_outbound_largest_queue_bytes",
      help: "Bytes queued for the connection that has the most queued",
      registers,
      collect() {
        let most = 0;
        for (const a of accounts.values()) most = Math.max(most, a.meter?.queued ?? 0);
        this.set(most);
      },
    });
    if (options.stallMs > 0) {
      const every = Math.min(1_000, Math.max(50, Math.floor(options.stallMs / 4)));
      this.#timer = setInterval(() => this.sweep(), every);
      this.#timer.unref();
    }
  }

  /** Bytes queued for clients right now, across every connection. */
  get queuedTotal(): number {
    return this.#queued;
  }

  /** Bytes reserved for answers in flight, across every connection. */
  get reservedTotal(): number {
    return this.#reserved;
  }

  /** Starts accounting for one engine.io session (engine.io's `connection` event). */
  watch(session: MeteredSession): OutboundAccount {
    const meter = this.meterSession(session, (delta) => (this.#queued += delta));
    if (!meter && !this.#warnedUnmetered) {
      this.#warnedUnmetered = true;
      this.logger.error(
        "outbound accounting unavailable: engine.io's session does not have the expected shape",
      );
    }
    const account: Account = {
      session,
      sid: session.id,
      meter,
      reserved: 0,
      uploading: 0,
      lastProgress: 0,
      drainMarkAt: performance.now(),
      drainMark: 0,
      drainMarkBefore: 0,
      movedAt: performance.now(),
      overSince: undefined,
      refusedSinceLog: 0,
      lastLogAt: 0,
      dropped: false,
    };
    this.#accounts.set(session, account);
    session.on("close", () => this.#accounts.delete(session));
    return account;
  }

  /** The account of an engine.io session (a socket.io socket's `conn`), if watched. */
  accountOf(session: unknown): OutboundAccount | undefined {
    return typeof session === "object" && session !== null
      ? this.#accounts.get(session)
      : undefined;
  }

  /**
   * Reserves, for the answer to `event` from `account`, the most it can take in the client's
   * queue, or says which bound refuses it (with the flat answer for the client).
   */
  reserve(
    account: OutboundAccount | undefined,
    event: ClientEvent,
    payload: unknown,
    maxHttpBufferSize: number,
  ): Reservation {
    const meter = account?.meter;
    if (!account || !meter) return NOTHING_RESERVED;
    const bytes = answerReserve(event, payload, maxHttpBufferSize, meter.transport);
    const refused = this.admit(account, bytes, event === Events.GetBlob);
    if (refused) return { refused, answer: this.refusal(refused) };
    let held = true;
    return {
      release: () => {
        if (held) this.release(account, bytes);
        held = false;
      },
    };
  }

  /**
   * Sets aside `bytes` of upload chunk for the Computer connection `target` until its answer
   * settles, or refuses it (`upload_bytes_in_flight`) when what that Computer has not answered
   * yet would exceed `maxUnreadBytes`. A Computer with nothing in flight always takes one chunk.
   */
  reserveUpload(target: OutboundAccount | undefined, bytes: number): Reservation {
    const bound = this.options.maxUnreadBytes;
    if (!target || bound <= 0) return NOTHING_RESERVED;
    if (target.uploading > 0 && target.uploading + bytes > bound) {
      const limit = "upload_bytes_in_flight";
      this.limitMetrics.refusals.inc({ limit });
      this.#warnRefused(target as Warned, limit);
      return { refused: limit, answer: this.refusal(limit) };
    }
    target.uploading += bytes;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        target.uploading -= bytes;
        if (target.uploading === 0 && this.#remoteUploads.get(target.sid) === target) {
          this.#remoteUploads.delete(target.sid);
        }
      },
    };
  }

  /**
   * The upload tally of Computer socket `sid` on another node of a cluster: this node bounds what
   * it forwards there as it does for its own sockets (D107). Kept while chunks are in
   * flight, forgotten when the last one settles.
   */
  remoteUploadTarget(sid: string): OutboundAccount {
    let t = this.#remoteUploads.get(sid);
    if (!t) {
      t = { sid, meter: null, reserved: 0, uploading: 0, refusedSinceLog: 0, lastLogAt: 0 };
      this.#remoteUploads.set(sid, t);
    }
    return t;
  }

  /** The flat `busy` of a refusal: which bound, and how large it is (D52). */
  refusal(limit: QueuedLimit): ErrorPayload {
    const o = this.options;
    const mib = (n: number): string => `${+(n / MiB).toFixed(1)} MiB`;
    switch (limit) {
      case "queued_bytes_per_connection":
        return limitRefusal(
          limit,
          `Too many bytes queued or awaited for this connection (limit ${mib(o.maxQueuedBytes)})`,
          o.maxQueuedBytes,
        );
      case "unread_bytes":
        return limitRefusal(
          limit,
          `This client has not read what the Server holds for it (limit ${mib(o.maxUnreadBytes)} unread): read, then ask again`,
          o.maxUnreadBytes,
        );
      case "upload_bytes_in_flight":
        return limitRefusal(
          limit,
          `The Computer has not taken the upload chunks already sent to it (limit ${mib(o.maxUnreadBytes)} in flight): wait for their answers, then send more`,
          o.maxUnreadBytes,
        );
      case "queued_bytes_total":
        return limitRefusal(
          limit,
          `The Server holds too many bytes for all its clients (limit ${mib(o.maxQueuedBytesTotal)}): retry later`,
          o.maxQueuedBytesTotal,
        );
    }
  }

  /**
   * Reserves `bytes` for an answer to `account`, or says which bound refuses it; `pull`: the
   * request is a `client:get_blob`. A connection (or a Server) that holds nothing is always
   * admitted, so a bound set below one answer cannot lock everyone out.
   */
  admit(account: OutboundAccount | undefined, bytes: number, pull = false): QueuedLimit | null {
    const meter = account?.meter;
    if (!account || !meter) return null;
    const held = meter.queued + account.reserved;
    const { maxQueuedBytes, maxQueuedBytesTotal } = this.options;
    const total = this.#queued + this.#reserved;
    let refused: QueuedLimit | null = null;
    if (held > 0 && maxQueuedBytes > 0 && held + bytes > maxQueuedBytes) {
      refused = "queued_bytes_per_connection";
    } else if (pull && this.#overUnread(account as Account, meter)) {
      refused = "unread_bytes";
    } else if (total > 0 && maxQueuedBytesTotal > 0 && total + bytes > maxQueuedBytesTotal) {
      refused = "queued_bytes_total";
    }
    if (refused) {
      this.limitMetrics.refusals.inc({ limit: refused });
      this.#warnRefused(account as Account, refused);
      return refused;
    }
    account.reserved += bytes;
    this.#reserved += bytes;
    return null;
  }

  /**
   * Whether the bytes queued for the client (answers it has not read) exceed `maxUnreadBytes`
   * plus what it took lately (since the mark before last: at least 0.5 s, about 1 s while
   * requests keep coming). Reservations do not count (D52): they are answers that have not
   * arrived, and a slow Computer is not a client that does not read.
   */
  #overUnread(a: Account, meter: SessionMeter): boolean {
    const { maxUnreadBytes, maxQueuedBytes } = this.options;
    const unread = meter.queued;
    if (maxUnreadBytes <= 0 || unread === 0) return false;
    const now = performance.now();
    if (now - a.drainMarkAt >= 500) {
      a.drainMarkBefore = a.drainMark;
      a.drainMark = meter.drained;
      a.drainMarkAt = now;
    }
    const room = maxUnreadBytes + (meter.drained - a.drainMarkBefore);
    return unread > (maxQueuedBytes > 0 ? Math.min(room, maxQueuedBytes) : room);
  }

  /** Gives back a reservation (the request was answered, failed or dropped). */
  release(account: OutboundAccount | undefined, bytes: number): void {
    if (!account?.meter) return;
    account.reserved -= bytes;
    this.#reserved -= bytes;
  }

  /** Closes the connection now (logged, counted); what it held is freed. */
  drop(account: OutboundAccount, reason: DropReason): void {
    const a = account as Account;
    if (a.dropped) return;
    a.dropped = true;
    this.limitMetrics.disconnects.inc({ reason });
    this.logger.warn(
      { sid: a.sid, reason, queued: a.meter?.queued ?? 0, transport: a.meter?.transport },
      "connection dropped by the Server",
    );
    if (a.meter) a.meter.drop();
    else a.session.close(true);
  }

  /** One look at every connection: drops the stalled and the persistently over-bound. */
  sweep(now = performance.now()): void {
    const { stallMs, maxQueuedBytes } = this.options;
    if (stallMs <= 0) return;
    for (const a of [...this.#accounts.values()]) {
      const queued = a.meter?.queued ?? 0;
      if (queued === 0 || !a.meter) {
        a.movedAt = now;
        a.overSince = undefined;
        continue;
      }
      const progress = a.meter.progress();
      if (progress !== a.lastProgress) {
        a.lastProgress = progress;
        a.movedAt = now;
      }
      if (maxQueuedBytes > 0 && queued > maxQueuedBytes) a.overSince ??= now;
      else a.overSince = undefined;
      if (now - a.movedAt >= stallMs) this.drop(a, "outbound_stalled");
      else if (a.overSince !== undefined && now - a.overSince >= stallMs)
        this.drop(a, "outbound_over_bound");
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #warnRefused(a: Warned, limit: QueuedLimit): void {
    a.refusedSinceLog += 1;
    const now = Date.now();
    if (now - a.lastLogAt < LOG_EVERY_MS) return;
    this.logger.warn(
      {
        sid: a.sid,
        limit,
        queued: a.meter?.queued ?? 0,
        reserved: a.reserved,
        refused: a.refusedSinceLog,
      },
      "requests refused: a bound on what the Server holds for the client",
    );
    a.lastLogAt = now;
    a.refusedSinceLog = 0;
  }
}
