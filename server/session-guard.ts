/**
 * One socket per namespace per session, and authentication that cannot be guessed at speed
 * (D53; docs/configuration.md, "Per-client limits").
 *
 * socket.io opens a socket for every CONNECT packet of a namespace the session has no socket on
 * yet, and a socket is "on" the namespace only once its middleware has admitted it: while our
 * asynchronous auth runs, every further CONNECT opens another socket. One polling POST of
 * repeated CONNECTs thus made tens of thousands of sockets on one session, and CONNECT packets
 * passed neither the per-socket event rate nor any count of failures. Here, from engine.io's
 * public `packet` event (each packet a client sends, before socket.io reads it):
 * - a CONNECT for a namespace the session already has, or is opening, a socket on closes the
 *   session at once, discarding what it queued (engine.io then drops the rest of that POST or
 *   WebSocket read); so does a CONNECT over the per-connection event rate (limits.ts: CONNECTs
 *   draw from the same bucket as events);
 * - every refused CONNECT (wrong token, the version gate, a namespace other than `/smcp`, an
 *   address backing off) counts against its session: the third closes it once the refusal is sent;
 * - failed authentications count against their address: from the tenth within a minute on, the
 *   address backs off (1 s, doubling to 60 s), and an authentication from it meanwhile is refused
 *   `busy` (`limit: "auth_failures"`, `retry_after_ms`) without its token being checked. Loopback
 *   addresses are exempt unless the Server limits them (`exemptLoopback`), as for sessions per
 *   address: a same-host proxy carries every client on one address.
 * Failures are logged one line per episode and address (the first at once, a count when it
 * ends), never a token.
 */
import { NAMESPACE, type ErrorPayload } from "@a2c-smcp/protocol";
import {
  clientAddress,
  isLoopback,
  limitRefusal,
  type EventRateLimiter,
  type LimitMetrics,
} from "./limits.ts";
import type { Logger } from "./log.ts";
import type { IncomingMessage } from "node:http";

/** Refused CONNECTs a session may have; the last closes it. */
export const MAX_REFUSED_CONNECTS = 3;
/** Failed authentications from one address within `FAILURE_WINDOW_MS` before it backs off. */
export const FREE_AUTH_FAILURES = 10;
const FAILURE_WINDOW_MS = 60_000;
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** Addresses followed at once; beyond it the stalest is forgotten. */
const MAX_ADDRESSES = 10_000;

export type SessionCloseReason = "repeated_connect" | "connect_rate" | "refused_connects";

/** The engine.io session events the guard follows (engine.io's `Socket`, public API). */
export interface GuardedSession {
  readonly request: IncomingMessage;
  on(event: "packet", fn: (packet: { type: string; data?: unknown }) => void): unknown;
  on(event: "close", fn: () => void): unknown;
  close(discard?: boolean): unknown;
}

interface SessionState {
  readonly session: GuardedSession;
  readonly address: string;
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

const CONNECT = 0x30; // "0"
const DISCONNECT = 0x31; // "1"

/**
 * The type (`0` CONNECT, `1` DISCONNECT) and namespace of a socket.io packet sent as engine.io
 * message `data`, as socket.io-parser reads them (the namespace runs to the first comma); null
 * for any other packet.
 */
export function connectPacket(data: unknown): { connect: boolean; nsp: string } | null {
  if (typeof data !== "string") return null;
  const type = data.charCodeAt(0);
  if (type !== CONNECT && type !== DISCONNECT) return null;
  const connect = type === CONNECT;
  if (data.charCodeAt(1) !== 0x2f /* / */) return { connect, nsp: "/" };
  const comma = data.indexOf(",", 1);
  return { connect, nsp: comma < 0 ? data.slice(1) : data.slice(1, comma) };
}

export class SessionGuard {
  readonly #sessions = new WeakMap<object, SessionState>();
  readonly #addresses = new Map<string, AddressState>();

  constructor(
    private readonly eventLimit: EventRateLimiter,
    private readonly exemptLoopback: boolean,
    private readonly metrics: LimitMetrics,
    private readonly logger: Logger,
  ) {}

  /** Follows a new engine.io session's CONNECT packets (engine.io's `connection` event). */
  watch(session: GuardedSession): void {
    const state: SessionState = {
      session,
      address: clientAddress(session.request),
      namespaces: new Set(),
      refused: 0,
      closed: false,
    };
    this.#sessions.set(session, state);
    session.on("close", () => (state.closed = true));
    session.on("packet", (packet) => {
      if (packet.type !== "message" || state.closed) return;
      const p = connectPacket(packet.data);
      if (p === null) return;
      const nsp = p.nsp;
      // The client leaves: socket.io handles it a tick later, a CONNECT may follow at once.
      if (!p.connect) return void state.namespaces.delete(nsp);
      if (state.namespaces.has(nsp)) return this.#close(state, "repeated_connect");
      if (!this.eventLimit.take(session)) {
        this.metrics.refusals.inc({ limit: "events_per_second" });
        return this.#close(state, "connect_rate");
      }
      // socket.io refuses any other namespace itself, or our middleware does (`/`).
      if (nsp === NAMESPACE) state.namespaces.add(nsp);
      else this.#refused(state);
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
   * Refusal of an authentication from the session's address while it backs off (the token is
   * not checked), or null.
   */
  backingOff(session: object): ErrorPayload | null {
    const state = this.#sessions.get(session);
    if (!state || this.#exempt(state.address)) return null;
    const a = this.#addresses.get(state.address);
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

  /**
   * The CONNECT of `session` on `nsp` was refused (`auth`: for a wrong or missing credential).
   * Counts against the session (closed after `MAX_REFUSED_CONNECTS`) and, for `auth`, the address.
   */
  refused(session: object, nsp: string, auth: boolean): void {
    const state = this.#sessions.get(session);
    if (!state) return;
    state.namespaces.delete(nsp);
    if (auth) this.#authFailed(state.address);
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
    return this.exemptLoopback && isLoopback(address);
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
