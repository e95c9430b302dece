/**
 * Per-connection state kept in `socket.data`, and the helpers every handler uses. Connection
 * state is local to the node that owns the socket; office membership also lives in the
 * OfficeRegistry (the shared truth), and `member` here mirrors what this socket's own handlers
 * wrote there.
 */
import type { DefaultEventsMap, Namespace, Socket } from "socket.io";
import type { Role } from "@a2c-smcp/protocol";
import type { Principal } from "./auth.ts";
import type { Logger } from "./log.ts";
import type { Member } from "./offices.ts";

export interface ConnectionState {
  principal: Principal;
  /** The `a2c_version` the gate admitted. */
  a2cVersion: string;
  member: Member | null;
  /** Role of the first successful join; the same connection may not change it. */
  lockedRole: Role | null;
  /** Membership operations of one socket run one after another (join, leave, disconnect). */
  chain: Promise<void>;
}

/**
 * Event maps are left open on purpose: every inbound payload is untrusted and checked with the
 * protocol schemas in the handler, and the handlers must see exactly what the peer sent.
 */
export type SmcpSocket = Socket<
  DefaultEventsMap,
  DefaultEventsMap,
  DefaultEventsMap,
  ConnectionState
>;
export type SmcpNamespace = Namespace<
  DefaultEventsMap,
  DefaultEventsMap,
  DefaultEventsMap,
  ConnectionState
>;

/** socket.io room of an office. Prefixed so an office id can never collide with a socket id room. */
export function officeRoom(officeId: string): string {
  return `office:${officeId}`;
}

/** Runs `task` after every earlier membership operation of the same socket. Never rejects. */
export function serialize(
  state: ConnectionState,
  logger: Logger,
  task: () => Promise<void>,
): Promise<void> {
  const next = state.chain.then(task).catch((err: unknown) => {
    logger.error({ err }, "membership operation failed");
  });
  state.chain = next;
  return next;
}
