/**
 * The Computer's connection to the Server: the socket on `/smcp`, joining its office as a
 * `computer` and joining again after every reconnect, and the decision to give up.
 *
 * - A join left unanswered is asked again (a starved or restarting Server may answer late;
 *   joining the office one is in under the same name is a no-op on the Server).
 * - A join refused for a reason that passes (`registry_unavailable`, ...: D55) is asked again
 *   with a backoff (250 ms doubling to `JOIN_RETRY_MAX_MS`, jittered), logged at attempts 1, 2,
 *   4, 8, ...; any other refusal before the first success is final (`join_refused`). After a
 *   reconnect the Server may still hold the old session for a moment, so a refused rejoin is
 *   retried with the same backoff.
 * - A final `connect_error` (refused token, protocol version: connect-error.ts) ends it; anything
 *   else is left to socket.io's reconnection. A Server-side disconnect stops socket.io's
 *   reconnection, so the Computer connects again itself.
 * - `server:update_*` notifications go out only while joined (the Server scopes them to the
 *   office, D6).
 */
import type { Logger } from "pino";
import { io, type Socket } from "socket.io-client";
import {
  DEFAULT_ENGINE_PATH,
  Events,
  NAMESPACE,
  PROTOCOL_VERSION,
  parseJoinRefusal,
  VERSION_QUERY_PARAM,
  type ClientToServerEvents,
  type ServerToClientEvents,
  type Transport,
} from "@a2c-smcp/protocol";
import { ComputerConnectError, describeConnectError } from "./connect-error.ts";

export type ComputerSocket = Socket<ServerToClientEvents, ClientToServerEvents>;
export type Notification = "server:update_skills" | "server:update_tool_list";

export interface ConnectionOptions {
  /** Server base URL; the namespace is appended. */
  server: string;
  office: string;
  name: string;
  token?: string;
  /** Engine.IO path (D2). */
  path?: string;
  /** Client transports; polling first, as clients connect (docs/protocol.md, Connection). */
  transports?: Transport[];
  /** How long one `server:join_office` waits for its answer before it is sent again (ms). */
  joinTimeoutMs?: number;
  /** Reject `started` if not joined within this time (ms); 0 = wait forever. */
  startTimeoutMs?: number;
  log: Logger;
}

export interface ConnectionEvents {
  /** Joined the office (first time and after every reconnect). */
  joined(notify: (event: Notification) => void): void;
  /** Left it: disconnected, or closing. */
  left(): void;
  /** Gave up for good after `started` had resolved. */
  fatal(err: Error): void;
}

export interface Connection {
  readonly socket: ComputerSocket;
  readonly joined: boolean;
  /** Connects; resolves once joined, rejects on a final failure or the start timeout. */
  start(): Promise<void>;
  /** Leaves the office (when joined) and disconnects. */
  close(): Promise<void>;
}

const JOIN_TIMEOUT_MS = 10_000;
const REJOIN_DELAY_MS = 1_000;
const JOIN_RETRY_MIN_MS = 250;
/** Longest wait between two tries of a refused join: rejoined this soon after the cause passes. */
export const JOIN_RETRY_MAX_MS = 2_000;
const DEFAULT_START_TIMEOUT_MS = 30_000;
const LEAVE_TIMEOUT_MS = 1_000;

/** The Computer's socket, with its join state machine; nothing is sent before `start`. */
export function connection(options: ConnectionOptions, events: ConnectionEvents): Connection {
  const s: ComputerSocket = io(`${options.server.replace(/\/+$/, "")}${NAMESPACE}`, {
    path: options.path ?? DEFAULT_ENGINE_PATH,
    query: { [VERSION_QUERY_PARAM]: PROTOCOL_VERSION },
    auth: options.token !== undefined ? { token: options.token } : {},
    transports: options.transports ?? ["polling", "websocket"],
    reconnectionDelayMax: 5_000,
    autoConnect: false,
  });
  const { log, name, office } = options;
  const joinTimeoutMs = options.joinTimeoutMs ?? JOIN_TIMEOUT_MS;
  let joined = false;
  let everJoined = false;
  let closing = false;
  let rejoinTimer: NodeJS.Timeout | undefined;
  /** Refused joins in a row (the backoff's exponent); 0 after a join lands. */
  let refusals = 0;
  let settleStart: { resolve: () => void; reject: (err: Error) => void } | undefined;

  const fatal = (err: Error): void => {
    log.error({ err: err.message }, "giving up");
    s.disconnect();
    if (settleStart) settleStart.reject(err);
    else events.fatal(err);
    settleStart = undefined;
  };

  const notify = (event: Notification): void => {
    if (joined) s.emit(event, { computer: name });
  };

  const retryJoin = (delayMs = REJOIN_DELAY_MS): void => {
    rejoinTimer = setTimeout(() => s.connected && join(), delayMs);
  };

  /** The next wait after a refused join: doubling, capped, ±25 % so Computers do not align. */
  const refusedBackoff = (): number => {
    const base = Math.min(JOIN_RETRY_MAX_MS, JOIN_RETRY_MIN_MS * 2 ** Math.min(refusals, 16));
    refusals += 1;
    return Math.round(base * (0.75 + Math.random() * 0.5));
  };

  const join = (): void => {
    s.timeout(joinTimeoutMs).emit(
      Events.JoinOffice,
      { role: "computer", name, office_id: office },
      (err: Error | null, ok?: boolean, reason?: string | null) => {
        if (closing) return;
        if (err) {
          log.warn({ timeoutMs: joinTimeoutMs }, "join not answered; retrying");
          return retryJoin();
        }
        if (ok !== true) {
          const why = reason ?? "refused";
          const refusal = parseJoinRefusal(reason);
          if (!refusal.transient && !everJoined) {
            return fatal(
              new ComputerConnectError("join_refused", `join refused: ${why}`, undefined, {
                reason: refusal.token,
              }),
            );
          }
          const attempt = refusals + 1;
          const delayMs = refusedBackoff();
          // Logged at attempts 1, 2, 4, 8, ...: a long outage is visible without a line a second.
          if ((attempt & (attempt - 1)) === 0) {
            log.warn(
              { reason: why, attempt, retryInMs: delayMs },
              everJoined ? "rejoin refused; retrying" : "join refused for now; retrying",
            );
          }
          return retryJoin(delayMs);
        }
        if (refusals > 0) log.info({ attempts: refusals + 1 }, "join accepted after refusals");
        refusals = 0;
        joined = true;
        everJoined = true;
        log.info({ office }, "joined office");
        events.joined(notify);
        settleStart?.resolve();
        settleStart = undefined;
      },
    );
  };

  s.on("connect", () => {
    clearTimeout(rejoinTimer); // a retry of the last connection's join is moot now
    log.info({ transport: s.io.engine?.transport?.name }, "connected");
    join();
  });
  s.on("disconnect", (reason) => {
    if (joined) events.left();
    joined = false;
    if (closing) return;
    log.warn({ reason }, "disconnected");
    if (reason === "io server disconnect") {
      rejoinTimer = setTimeout(() => s.connect(), REJOIN_DELAY_MS);
    }
  });
  s.on("connect_error", (err) => {
    const described = describeConnectError(err);
    if (described) return fatal(described);
    log.warn({ err: err.message }, "connect failed; retrying");
  });

  const close = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    clearTimeout(rejoinTimer);
    if (joined) events.left();
    if (joined && s.connected) {
      await s
        .timeout(LEAVE_TIMEOUT_MS)
        .emitWithAck(Events.LeaveOffice, { office_id: office })
        .catch(() => undefined);
    }
    joined = false;
    s.disconnect();
  };

  const start = async (): Promise<void> => {
    const started = new Promise<void>((resolve, reject) => (settleStart = { resolve, reject }));
    s.connect();
    const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const timer =
      startTimeoutMs > 0
        ? setTimeout(
            () =>
              fatal(new ComputerConnectError("timeout", `not joined within ${startTimeoutMs} ms`)),
            startTimeoutMs,
          )
        : undefined;
    try {
      await started;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    socket: s,
    get joined() {
      return joined;
    },
    start,
    close,
  };
}
