/**
 * Per-client limits (docs/configuration.md, "Per-client limits"). The protocol recommends at most
 * 100 concurrent connections per IP, 100 requests a second and 1 MB messages, with abnormal rates
 * logged at WARNING. The 1 MB message limit is engine.io's `maxHttpBufferSize`; this file holds
 * the connections per address, the refusal payload and the limits' metrics.
 *
 * - `ConnectionLimiter`: Engine.IO sessions per remote address. It runs in the HTTP layer, next to
 *   the version gate and before engine.io, on every request that would OPEN a session (a polling
 *   handshake or a direct WebSocket upgrade: no `sid`). A session counts from the admitted
 *   handshake until engine.io closes it, so half-open sessions (a handshake flood that never polls
 *   again, alive until the heartbeat drops them) are bounded per address too.
 * The event rate (a token bucket per connection) is namespace.ts's, with the other rules on
 * what a client may send.
 *
 * Refusals are counted in /metrics (`a2c_limit_refusals_total{limit}`) and logged at WARNING, at
 * most once per address per LOG_EVERY_MS with the number refused since, so a flood
 * cannot flood the log. Nothing here logs a token.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { Counter, Gauge, type Registry } from "prom-client";
import { busy, type ErrorPayload } from "@a2c-smcp/protocol";
import type { Logger } from "./log.ts";

/** One WARNING per address per this interval while it keeps being refused. */
const LOG_EVERY_MS = 10_000;
/** `Retry-After` of a refused handshake: sessions end on the client's leave or the heartbeat. */
const RETRY_AFTER_S = 5;

/** Refusals of outbound.ts: too many bytes queued for one client or all of them, or held unread. */
export type QueuedLimit =
  "queued_bytes_per_connection" | "unread_bytes" | "queued_bytes_total" | "upload_bytes_in_flight";
export type LimitName =
  "connections_per_ip" | "events_per_second" | "requests_in_flight" | "auth_failures" | QueuedLimit;

/**
 * The flat error of a limit refusal: 500 `busy`, which clients retry with a backoff (D29), with
 * the bound that refused (`details.limit`) and, where it has one, its size (`details.max`).
 */
export function limitRefusal(limit: LimitName, message: string, max?: number): ErrorPayload {
  const payload = busy(message);
  return {
    ...payload,
    details: { ...payload.details, limit, ...(max !== undefined ? { max } : {}) },
  };
}

/** The metrics of both limiters, registered on the Server's own registry. */
export class LimitMetrics {
  readonly refusals: Counter<"limit">;
  /** Connections the Server closed itself (outbound.ts, namespace.ts). */
  readonly disconnects: Counter<"reason">;

  constructor(registry: Registry, sessionsPerIpMax: () => number) {
    const registers = [registry];
    this.refusals = new Counter({
      name: "a2c_limit_refusals_total",
      help: "Handshakes and requests refused by a per-client limit (connections_per_ip, events_per_second, requests_in_flight, queued_bytes_per_connection, unread_bytes, queued_bytes_total, upload_bytes_in_flight, auth_failures)",
      labelNames: ["limit"] as const,
      registers,
    });
    this.disconnects = new Counter({
      name: "a2c_disconnects_total",
      help: "Connections the Server closed itself, by reason (outbound_stalled, outbound_over_bound, unsolicited_pong, repeated_connect, connect_rate, refused_connects)",
      labelNames: ["reason"] as const,
      registers,
    });
    new Gauge({
      name: "a2c_sessions_per_ip_max",
      help: "Engine.IO sessions (open or being opened) held by the busiest remote address",
      registers,
      collect() {
        this.set(sessionsPerIpMax());
      },
    });
  }
}

/** `::ffff:1.2.3.4` (IPv4 on a dual-stack socket) counts as `1.2.3.4`. */
export function clientAddress(req: IncomingMessage): string {
  const raw = req.socket.remoteAddress ?? "unknown";
  return raw.startsWith("::ffff:") ? raw.slice(7) : raw;
}

/** 127.0.0.0/8 and ::1 (after `clientAddress` folded IPv4-mapped addresses). */
export function isLoopback(address: string): boolean {
  return address === "::1" || /^127\.\d+\.\d+\.\d+$/.test(address);
}

/** True when the request would open an Engine.IO session (engine.io: `if (!req._query.sid)`). */
export function opensSession(req: IncomingMessage): boolean {
  try {
    const sids = new URL(req.url ?? "/", "http://limits.invalid").searchParams.getAll("sid");
    return !sids.some((s) => s !== "");
  } catch {
    return true; // engine.io refuses it; counted until its answer is sent, like any handshake
  }
}

interface AddressState {
  /** Sessions open or being opened from this address. */
  held: number;
  refusedSinceLog: number;
  lastLogAt: number;
}

/** What `admit` answers when an address is over its limit. */
export interface Refusal {
  status: 429;
  body: ErrorPayload;
  headers: Record<string, string>;
}

export class ConnectionLimiter {
  private readonly byAddress = new Map<string, AddressState>();
  /** Handshake requests admitted whose session engine.io has not opened (yet, or ever). */
  private readonly pending = new Map<IncomingMessage, string>();

  constructor(
    /** 0 = no limit (sessions are still counted for the gauge). */
    readonly max: number,
    /** Loopback peers are counted but never refused (same host: see docs/configuration.md). */
    readonly exemptLoopback: boolean,
    private readonly metrics: LimitMetrics,
    private readonly logger: Logger,
  ) {}

  /** Largest number of sessions held by one address (the gauge). */
  busiest(): number {
    let most = 0;
    for (const s of this.byAddress.values()) most = Math.max(most, s.held);
    return most;
  }

  /**
   * Admits a session-opening request or answers why not. An admitted request holds one slot of
   * its address until its session closes or, when no session comes of it, until `done` fires.
   * `done` is the polling response's or the upgraded socket's `close`.
   */
  admit(req: IncomingMessage, done: ServerResponse | Duplex): Refusal | null {
    const address = clientAddress(req);
    let state = this.byAddress.get(address);
    const limited = this.max > 0 && !(this.exemptLoopback && isLoopback(address));
    if (limited && state && state.held >= this.max) {
      this.metrics.refusals.inc({ limit: "connections_per_ip" });
      this.warn(address, state);
      return {
        status: 429,
        body: limitRefusal(
          "connections_per_ip",
          `Too many connections from this address (limit ${this.max})`,
          this.max,
        ),
        headers: { "Retry-After": String(RETRY_AFTER_S) },
      };
    }
    if (!state) {
      state = { held: 0, refusedSinceLog: 0, lastLogAt: 0 };
      this.byAddress.set(address, state);
    }
    state.held += 1;
    this.pending.set(req, address);
    done.once("close", () => {
      if (this.pending.delete(req)) this.release(address);
    });
    return null;
  }

  /**
   * engine.io opened a session for `request` (its `connection` event, emitted before the
   * handshake answer's `close`): the slot now lives as long as the session.
   */
  opened(request: IncomingMessage, session: { once(event: "close", fn: () => void): unknown }) {
    const address = this.pending.get(request);
    if (address === undefined) return;
    this.pending.delete(request);
    session.once("close", () => this.release(address));
  }

  private release(address: string): void {
    const state = this.byAddress.get(address);
    if (!state) return;
    state.held -= 1;
    if (state.held <= 0) this.byAddress.delete(address);
  }

  private warn(address: string, state: AddressState): void {
    state.refusedSinceLog += 1;
    const now = Date.now();
    if (now - state.lastLogAt < LOG_EVERY_MS) return;
    this.logger.warn(
      { address, limit: this.max, refused: state.refusedSinceLog },
      "connections refused: too many from one address",
    );
    state.lastLogAt = now;
    state.refusedSinceLog = 0;
  }
}

/** Answers a refused polling handshake (429, flat JSON body, like the gate's 400). */
export function writeLimitRefusal(res: ServerResponse, refusal: Refusal): void {
  const body = Buffer.from(JSON.stringify(refusal.body), "utf8");
  res.writeHead(refusal.status, {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    ...refusal.headers,
  });
  res.end(body);
}

/** Answers a refused WebSocket upgrade with the same raw HTTP 429, then closes the socket. */
export function writeUpgradeLimitRefusal(socket: Duplex, refusal: Refusal): void {
  const body = Buffer.from(JSON.stringify(refusal.body), "utf8");
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    ...refusal.headers,
    Connection: "close",
  };
  const head =
    `HTTP/1.1 ${refusal.status} Too Many Requests\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("") +
    "\r\n";
  socket.on("error", () => socket.destroy());
  if (socket.writable) socket.end(Buffer.concat([Buffer.from(head, "latin1"), body]));
  else socket.destroy();
}
