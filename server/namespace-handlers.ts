/**
 * The handlers of the `/smcp` namespace: the auth middleware (D4) and one guarded handler per
 * event. Handlers never throw into socket.io and never leave a promise unhandled: bad input of
 * any shape gets an answer where an ack was asked, and the process stays up.
 */
import type { ExtendedError, Server as SocketServer } from "socket.io";
import {
  CLIENT_EVENTS,
  Events,
  UPDATE_EVENTS,
  VERSION_QUERY_PARAM,
  internalError,
  unauthorized,
  type ErrorPayload,
  type SemVer,
} from "@a2c-smcp/protocol";
import type { AuthProvider } from "./auth.ts";
import type { SmcpNamespace, SmcpSocket } from "./connection.ts";
import { decide } from "./gate.ts";
import type { Logger } from "./log.ts";
import type { Membership } from "./membership.ts";
import type { ServerMetrics } from "./metrics.ts";
import type { Notifier, UpdateEvent } from "./notify.ts";
import type { OutboundGuard } from "./outbound.ts";
import type { Relay, RelaySender } from "./relay.ts";
import type { SessionGuard } from "./session-guard.ts";

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
  /** CONNECTs and failed authentications per session and address (session-guard.ts). */
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
  // session-guard.ts counts these refusals against the session from the CONNECT packet itself.
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
