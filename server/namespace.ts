/**
 * The `/smcp` namespace: who gets in and what reaches a handler. Two layers, the first under the
 * second: the session guard (below, `SessionGuard`) judges every packet a client sends before
 * socket.io reads it; the auth middleware (D4) and one guarded handler per event (`attachSmcp`)
 * take what it let in. Handlers never throw into socket.io and never leave a promise unhandled:
 * bad input of any shape gets an answer where an ack was asked, and the process stays up.
 *
 * What a client may send on a session (D28, D53; docs/configuration.md, "Per-client limits"): the
 * rules the Server applies to every packet and event before the namespace's handlers see it.
 *
 * One socket per namespace per session. socket.io opens a socket for every CONNECT packet of a
 * namespace the session has no socket on yet, and a socket is "on" the namespace only once its
 * middleware has admitted it: while our asynchronous auth runs, every further CONNECT opens
 * another socket. One polling POST of repeated CONNECTs thus made tens of thousands of sockets on
 * one session. Here, from engine.io's public `packet` event (each packet a client sends, before
 * socket.io reads it):
 * - a CONNECT for a namespace the session already has, or is opening, a socket on closes the
 *   session at once, discarding what it queued (engine.io then drops the rest of that POST or
 *   WebSocket read); so does a CONNECT over the connection's event rate;
 * - every refused CONNECT (wrong token, the version gate, a namespace other than `/smcp`, an
 *   address backing off) counts against its session: the third closes it once the refusal is sent;
 * - failed authentications count against their address: from the tenth within a minute on, the
 *   address backs off (1 s, doubling to 60 s), and a WRONG credential from it meanwhile is
 *   refused `busy` (`limit: "auth_failures"`, `retry_after_ms`) and closes its session at once.
 *   The token is always checked first, so a right one is admitted whatever its address failed
 *   (D70): behind a proxy or a NAT the guesser and the honest share the address, and
 *   a refusal made before the check refused them all. Loopback addresses are exempt unless the
 *   Server limits them (`exemptLoopback`), as for sessions per address.
 * Failures are logged one line per episode and address (the first at once, a count when it
 * ends), never a token.
 *
 * Liveness a client cannot game (D28): engine.io re-arms its heartbeat on ANY pong, so a client
 * that sends an unsolicited pong every few seconds postponed the Server's next ping forever and
 * was never found dead, even reading nothing. engine.io has at most one ping out at a time, and a
 * compliant client pongs only in answer: a pong with no ping outstanding drops the connection.
 *
 * Events: a token bucket per connection (engine.io session) over its events and CONNECT packets
 * (`maxEventsPerSecond`): an event over it never reaches its handler and gets the flat `busy` when
 * it asked for an ack. Chunk pulls are events too, so the rate caps a pull's throughput (rate x
 * chunk size): docs/configuration.md has the trade-off behind the defaults. An event nobody
 * handles (D27) is answered with the flat `unknownEvent` error when it asked for an ack, else
 * dropped; the lookup is the socket's own `listenerCount`, whose null-prototype store no name
 * (`__proto__`, a number, 10,000 characters) can reach past.
 *
 * Refusals are counted (`a2c_limit_refusals_total{limit}`, `a2c_refusals_total{reason}`) and
 * logged at most once per socket every 10 s with the number refused since.
 */
import type { IncomingMessage } from "node:http";
import type { Counter } from "prom-client";
import type { ExtendedError, Server as SocketServer } from "socket.io";
import {
  CLIENT_EVENTS,
  Events,
  NAMESPACE,
  UPDATE_EVENTS,
  VERSION_QUERY_PARAM,
  internalError,
  readPacketHeader,
  unauthorized,
  unknownEvent,
  type ErrorPayload,
  type SemVer,
} from "@a2c-smcp/protocol";
import type { AuthProvider } from "./auth.ts";
import type { SmcpNamespace, SmcpSocket } from "./connection.ts";
import { decide } from "./gate.ts";
import { clientAddress, isLoopback, limitRefusal, type LimitMetrics } from "./limits.ts";
import type { Logger } from "./log.ts";
import type { Membership } from "./membership.ts";
import type { ServerMetrics } from "./metrics.ts";
import type { Notifier, UpdateEvent } from "./notify.ts";
import type { OutboundGuard } from "./outbound.ts";
import type { Relay, RelaySender } from "./relay.ts";

/** Refused CONNECTs a session may have; the last closes it. */
export const MAX_REFUSED_CONNECTS = 3;
/** Failed authentications from one address within `FAILURE_WINDOW_MS` before it backs off. */
export const FREE_AUTH_FAILURES = 10;
const FAILURE_WINDOW_MS = 60_000;
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** Addresses followed at once; beyond it the stalest is forgotten. */
const MAX_ADDRESSES = 10_000;
/** One WARNING per socket per this interval while its events keep being refused. */
const LOG_EVERY_MS = 10_000;

export type SessionCloseReason = "repeated_connect" | "connect_rate" | "refused_connects";

/** The engine.io session events the guard follows (engine.io's `Socket`, public API). */
export interface GuardedSession {
  readonly request: IncomingMessage;
  on(
    event: "packet" | "packetCreate",
    fn: (packet: { type: string; data?: unknown }) => void,
  ): unknown;
  on(event: "close", fn: () => void): unknown;
  close(discard?: boolean): unknown;
}

/** The part of a socket.io server socket the event rules need. */
export interface GuardedSocket {
  readonly id: string;
  /** Its engine.io session: the bucket is the connection's, shared with its CONNECT packets. */
  readonly conn: object;
  readonly handshake: { address: string };
  readonly data: { principal?: { id: string } } | undefined;
  use(fn: (packet: unknown[], next: (err?: Error) => void) => void): unknown;
  listenerCount(event: string): number;
}

export interface SessionGuardOptions {
  /** Events (and CONNECTs) a second per connection; 0 = no limit. */
  maxEventsPerSecond: number;
  /** Events a quiet connection may send at once. */
  eventsBurst: number;
  /** Loopback peers never back off for failed authentications. */
  exemptLoopback: boolean;
  /** Drops a connection that pongs unasked (outbound.ts drops without a close handshake). */
  dropUnsolicitedPong(session: object): void;
}

/** A token bucket: `rate` tokens a second, at most `burst` saved up. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  take(): boolean {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.rate);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

interface SessionState {
  readonly session: GuardedSession;
  readonly address: string;
  readonly bucket: TokenBucket | null;
  /** A ping of the Server's is waiting for its pong. */
  pingOut: boolean;
  /** Namespaces with a socket open or being opened. */
  readonly namespaces: Set<string>;
  refused: number;
  closed: boolean;
}

interface AddressState {
  failures: number;
  lastFailureAt: number;
  blockedUntil: number;
  /** Failures since the episode's first line was logged. */
  unlogged: number;
  episodeStartedAt: number;
  episodeTimer: NodeJS.Timeout | undefined;
}

/**
 * The type (`0` CONNECT, `1` DISCONNECT) and namespace of a socket.io packet sent as engine.io
 * message `data`, as socket.io-parser reads them (the namespace runs to the first comma); null
 * for any other packet.
 */
export function connectPacket(data: unknown): { connect: boolean; nsp: string } | null {
  const header = typeof data === "string" ? readPacketHeader(data) : null;
  if (header === null || header.type > 1) return null;
  return { connect: header.type === 0, nsp: header.nsp };
}

export class SessionGuard {
  readonly #sessions = new WeakMap<object, SessionState>();
  readonly #addresses = new Map<string, AddressState>();

  readonly #eventRefusal: ErrorPayload;

  constructor(
    private readonly options: SessionGuardOptions,
    private readonly metrics: LimitMetrics,
    /** `a2c_refusals_total{reason}` (unknown events). */
    private readonly refusals: Counter<"reason">,
    private readonly logger: Logger,
  ) {
    const rate = options.maxEventsPerSecond;
    this.#eventRefusal = limitRefusal(
      "events_per_second",
      `Too many requests: over ${rate} events a second`,
      rate,
    );
  }

  /** Follows a new engine.io session's packets (engine.io's `connection` event). */
  watch(session: GuardedSession): void {
    const { maxEventsPerSecond: rate, eventsBurst } = this.options;
    const state: SessionState = {
      session,
      address: clientAddress(session.request),
      bucket: rate > 0 ? new TokenBucket(rate, Math.max(1, eventsBurst)) : null,
      pingOut: false,
      namespaces: new Set(),
      refused: 0,
      closed: false,
    };
    this.#sessions.set(session, state);
    session.on("close", () => (state.closed = true));
    session.on("packetCreate", (packet) => {
      if (packet.type === "ping") state.pingOut = true;
    });
    session.on("packet", (packet) => {
      if (packet.type === "pong") {
        if (state.pingOut) state.pingOut = false;
        else this.options.dropUnsolicitedPong(session);
        return;
      }
      if (packet.type !== "message" || state.closed) return;
      const p = connectPacket(packet.data);
      if (p === null) return;
      const nsp = p.nsp;
      // The client leaves: socket.io handles it a tick later, a CONNECT may follow at once.
      if (!p.connect) return void state.namespaces.delete(nsp);
      if (state.namespaces.has(nsp)) return this.#close(state, "repeated_connect");
      if (state.bucket && !state.bucket.take()) {
        this.metrics.refusals.inc({ limit: "events_per_second" });
        return this.#close(state, "connect_rate");
      }
      // socket.io refuses any other namespace itself, or our middleware does (`/`).
      if (nsp === NAMESPACE) state.namespaces.add(nsp);
      else this.#refused(state);
    });
  }

  /**
   * The event rules of one socket (the namespace's `connection` event), in this order: the
   * connection's event rate, then unknown events, so a flood of unknown events costs what a flood
   * of known ones does.
   */
  attach(socket: GuardedSocket): void {
    const bucket = this.#sessions.get(socket.conn)?.bucket;
    if (bucket) {
      let refusedSinceLog = 0;
      let lastLogAt = 0;
      socket.use((packet, next) => {
        if (bucket.take()) return next();
        this.metrics.refusals.inc({ limit: "events_per_second" });
        const ack = packet[packet.length - 1];
        if (typeof ack === "function") (ack as (a: unknown) => void)(this.#eventRefusal);
        refusedSinceLog += 1;
        const now = Date.now();
        if (now - lastLogAt < LOG_EVERY_MS) return;
        this.logger.warn(
          {
            sid: socket.id,
            principal: socket.data?.principal?.id,
            address: socket.handshake.address,
            event: typeof packet[0] === "string" ? packet[0].slice(0, 64) : undefined,
            rate: this.options.maxEventsPerSecond,
            refused: refusedSinceLog,
          },
          "events refused: over the per-connection rate",
        );
        lastLogAt = now;
        refusedSinceLog = 0;
      });
    }
    let lastUnknownLogAt = 0;
    socket.use((packet, next) => {
      const event = packet[0];
      if (
        (typeof event === "string" || typeof event === "number") &&
        socket.listenerCount(String(event)) > 0
      )
        return next();
      const ack = packet[packet.length - 1];
      if (typeof ack !== "function") return; // nobody waits for an answer
      this.refusals.inc({ reason: "unknown_event" });
      const answer = unknownEvent(event);
      (ack as (a: unknown) => void)(answer);
      const now = Date.now();
      if (now - lastUnknownLogAt >= LOG_EVERY_MS) {
        lastUnknownLogAt = now;
        this.logger.debug(
          { sid: socket.id, event: answer.details?.event },
          "unknown event answered",
        );
      }
    });
  }

  /** A socket of `session` joined `nsp` (the namespace's `connection` event). */
  opened(session: object, nsp: string): void {
    this.#sessions.get(session)?.namespaces.add(nsp);
  }

  /** The socket of `session` on `nsp` is gone: the client may connect again. */
  closedSocket(session: object, nsp: string): void {
    this.#sessions.get(session)?.namespaces.delete(nsp);
  }

  /**
   * A wrong or missing credential on `session`'s CONNECT for `nsp`, after the provider checked it
   * (a right one never comes here). Counts against the address and the session; answers the
   * `auth_failures` refusal when the address was already backing off, which also closes the
   * session (one guess per handshake), else null: the caller answers `unauthorized`.
   */
  authFailed(session: object, nsp: string): ErrorPayload | null {
    const state = this.#sessions.get(session);
    if (!state) return null;
    state.namespaces.delete(nsp);
    const refusal = this.#backingOff(state.address);
    this.#authFailed(state.address);
    if (refusal) state.refused = MAX_REFUSED_CONNECTS - 1;
    this.#refused(state);
    return refusal;
  }

  /** Any other refused CONNECT of `session` on `nsp` (the version gate, a provider that failed). */
  refused(session: object, nsp: string): void {
    const state = this.#sessions.get(session);
    if (!state) return;
    state.namespaces.delete(nsp);
    this.#refused(state);
  }

  /** Forgets every address (the Server closes). */
  close(): void {
    for (const a of this.#addresses.values()) clearTimeout(a.episodeTimer);
    this.#addresses.clear();
  }

  #refused(state: SessionState): void {
    state.refused += 1;
    // After the refusal that is being sent: a plain close lets engine.io flush it first.
    if (state.refused >= MAX_REFUSED_CONNECTS) {
      setImmediate(() => this.#close(state, "refused_connects", false));
    }
  }

  #close(state: SessionState, reason: SessionCloseReason, discard = true): void {
    if (state.closed) return;
    state.closed = true;
    this.metrics.disconnects.inc({ reason });
    this.logger.warn({ address: state.address, reason }, "session closed by the Server");
    state.session.close(discard);
  }

  #exempt(address: string): boolean {
    return this.options.exemptLoopback && isLoopback(address);
  }

  /** The `auth_failures` refusal while `address` backs off, or null. */
  #backingOff(address: string): ErrorPayload | null {
    if (this.#exempt(address)) return null;
    const a = this.#addresses.get(address);
    const wait = a ? Math.ceil(a.blockedUntil - performance.now()) : 0;
    if (wait <= 0) return null;
    this.metrics.refusals.inc({ limit: "auth_failures" });
    const answer = limitRefusal(
      "auth_failures",
      `Too many failed authentications from this address: retry in ${Math.ceil(wait / 1000)} s`,
      FREE_AUTH_FAILURES,
    );
    return { ...answer, details: { ...answer.details, retry_after_ms: wait } };
  }

  #authFailed(address: string): void {
    const now = performance.now();
    let a = this.#addresses.get(address);
    if (a && now - a.lastFailureAt > FAILURE_WINDOW_MS) {
      a.failures = 0;
    }
    if (!a) {
      if (this.#addresses.size >= MAX_ADDRESSES) this.#forgetStalest();
      a = {
        failures: 0,
        lastFailureAt: now,
        blockedUntil: 0,
        unlogged: 0,
        episodeStartedAt: now,
        episodeTimer: undefined,
      };
      this.#addresses.set(address, a);
    }
    a.failures += 1;
    a.lastFailureAt = now;
    if (!this.#exempt(address) && a.failures >= FREE_AUTH_FAILURES) {
      const backoff = FIRST_BACKOFF_MS * 2 ** (a.failures - FREE_AUTH_FAILURES);
      a.blockedUntil = now + Math.min(MAX_BACKOFF_MS, backoff);
    }
    this.#logFailure(address, a, now);
  }

  /** One line at an episode's first failure, one with the count when it has been quiet a window. */
  #logFailure(address: string, a: AddressState, now: number): void {
    if (a.episodeTimer) {
      a.unlogged += 1;
      return;
    }
    a.episodeStartedAt = now;
    a.unlogged = 0;
    this.logger.warn(
      { address },
      "connection refused: unauthorized (further failures from this address are counted)",
    );
    const end = (): void => {
      const quietFor = performance.now() - a.lastFailureAt;
      if (quietFor < FAILURE_WINDOW_MS) {
        a.episodeTimer = setTimeout(end, FAILURE_WINDOW_MS - quietFor);
        a.episodeTimer.unref();
        return;
      }
      a.episodeTimer = undefined;
      if (a.unlogged > 0) {
        this.logger.warn(
          {
            address,
            failures: a.unlogged + 1,
            seconds: Math.round((a.lastFailureAt - a.episodeStartedAt) / 1000),
          },
          "authentication failures from one address ended",
        );
      }
      if (a.blockedUntil <= performance.now()) this.#addresses.delete(address);
    };
    a.episodeTimer = setTimeout(end, FAILURE_WINDOW_MS);
    a.episodeTimer.unref();
  }

  #forgetStalest(): void {
    const [address, a] = this.#addresses.entries().next().value as [string, AddressState];
    clearTimeout(a.episodeTimer);
    this.#addresses.delete(address);
  }
}

// ---------------------------------------------------------------------------------------------
// The handlers: the auth middleware and one guarded handler per event

export interface NamespaceHandlerOptions {
  nsp: SmcpNamespace;
  provider: AuthProvider;
  relay: Relay;
  membership: Membership;
  notifier: Notifier;
  metrics: ServerMetrics;
  logger: Logger;
  serverVersion: SemVer;
  versionText: string;
  /** Outbound accounting of each connection (outbound.ts), handed to the relay. */
  outbound?: OutboundGuard;
  /** CONNECTs and failed authentications per session and address (the guard above). */
  sessions: SessionGuard;
}

/** A connect refusal: the client's `connect_error` carries `data` = the flat payload. */
export function connectError(payload: ErrorPayload): ExtendedError {
  const err: ExtendedError = new Error(payload.message);
  err.data = payload;
  return err;
}

/** Only `/smcp` exists. socket.io refuses unknown namespaces itself; the main one must be closed. */
export function refuseOtherNamespaces(io: SocketServer): void {
  // The session guard counts these refusals against the session from the CONNECT packet itself.
  io.of("/").use((_socket, next) => {
    next(connectError({ code: 400, message: "Unknown namespace: use /smcp" }));
  });
}

function firstString(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && typeof value[0] === "string") return value[0];
  return null;
}

export function attachSmcp(opts: NamespaceHandlerOptions): void {
  opts.nsp.use((socket, next) => authenticate(opts, socket, next));
  opts.nsp.on("connection", (socket: SmcpSocket) => connected(opts, socket));
}

/** The auth middleware (D4): the version gate again, then the provider's decision. */
function authenticate(
  opts: NamespaceHandlerOptions,
  socket: SmcpSocket,
  next: (err?: ExtendedError) => void,
): void {
  const { nsp, logger } = opts;
  const refuse = (payload: ErrorPayload): void => {
    opts.sessions.refused(socket.conn, nsp.name);
    next(connectError(payload));
  };
  // Belt and braces: the HTTP gate already admitted this request; re-checking here costs
  // nothing and keeps the rule even if the HTTP layer is ever bypassed.
  const raw = firstString(socket.handshake.query[VERSION_QUERY_PARAM]);
  const gate = decide(raw, opts.serverVersion, opts.versionText);
  if (!gate.ok) return refuse(gate.body);
  // The credential is checked before any back-off, in the provider's constant time: a right
  // token is admitted however many wrong ones its address sent (D70).
  // Through a promise so that a provider that throws synchronously is caught too.
  Promise.resolve()
    .then(() =>
      opts.provider.authenticate({
        auth: socket.handshake.auth,
        headers: socket.handshake.headers,
        address: socket.handshake.address,
      }),
    )
    .then(
      (decision) => {
        if (!decision.ok) {
          opts.metrics.authFailures.inc();
          // Only now, for a wrong credential: an address that failed too often backs off (D53).
          const backingOff = opts.sessions.authFailed(socket.conn, nsp.name);
          return next(connectError(backingOff ?? unauthorized(decision.message)));
        }
        socket.data = {
          principal: decision.principal,
          a2cVersion: gate.clientVersion,
          member: null,
          lockedRole: null,
          chain: Promise.resolve(),
        };
        next();
      },
      (err: unknown) => {
        logger.error({ err }, "auth provider failed");
        refuse(internalError("Authentication unavailable"));
      },
    );
}

/** One guarded handler per event of an admitted socket, and what its disconnect settles. */
function connected(opts: NamespaceHandlerOptions, socket: SmcpSocket): void {
  const { nsp, logger } = opts;
  logger.debug({ sid: socket.id, principal: socket.data.principal.id }, "connected");
  const on = (event: string, handler: (args: unknown[]) => void | Promise<void>): void => {
    socket.on(event, (...args: unknown[]) => {
      try {
        const pending = handler(args);
        if (pending)
          pending.catch((err: unknown) => logger.error({ err, event }, "handler failed"));
      } catch (err) {
        logger.error({ err, event }, "handler failed");
      }
    });
  };
  const sender: RelaySender = {
    sid: socket.id,
    get member() {
      return socket.data.member;
    },
    isConnected: () => socket.connected,
    outbound: opts.outbound?.accountOf(socket.conn),
  };

  for (const event of CLIENT_EVENTS) on(event, (args) => opts.relay.route(event, sender, args));
  on(Events.JoinOffice, (args) => opts.membership.join(socket, args));
  on(Events.LeaveOffice, (args) => opts.membership.leave(socket, args));
  on(Events.ListRoom, (args) => opts.membership.listRoom(socket, args));
  for (const event of Object.keys(UPDATE_EVENTS) as UpdateEvent[]) {
    on(event, (args) => opts.notifier.update(event, socket, args));
  }
  on(Events.ToolCallCancel, (args) => opts.notifier.cancel(socket, args));

  opts.sessions.opened(socket.conn, nsp.name);
  socket.on("disconnect", (reason) => {
    opts.sessions.closedSocket(socket.conn, nsp.name);
    // D11 first and synchronously: every request in flight to this socket is answered now.
    const failed = opts.relay.computerGone(socket.id);
    const dropped = opts.relay.originGone(socket.id);
    logger.debug({ sid: socket.id, reason, failed, dropped }, "disconnected");
    void opts.membership.disconnect(socket);
  });
}
