/**
 * A liveness rule a client cannot game: only an answer to the Server's own ping counts.
 *
 * engine.io's server Socket (protocol 4) clears its ping timeout and re-arms its ping interval on
 * ANY pong it receives (`onPacket`, case "pong"), so a client that sends an unsolicited pong
 * every few seconds postpones the Server's next ping forever and is never found dead, even if it
 * reads nothing. A compliant engine.io client sends a pong only in answer to a ping, and engine.io
 * has at most one ping out at a time (the next is scheduled by the pong). So a pong with no ping
 * outstanding is a protocol violation: the connection is closed (`onViolation`).
 *
 * Public engine.io events only: `packetCreate` sees the Server's ping as it is queued, `packet`
 * sees each received packet before engine.io acts on it. (Upgrade probes travel on the new
 * transport before it belongs to the session, so they are not seen here.)
 */

interface HeartbeatPacket {
  readonly type: string;
}

/** The parts of an engine.io server Socket this rule listens to. */
export interface HeartbeatSession {
  on(event: "packetCreate" | "packet", fn: (packet: HeartbeatPacket) => void): unknown;
}

export function requireSolicitedPongs(session: HeartbeatSession, onViolation: () => void): void {
  let pingOut = false;
  session.on("packetCreate", (packet) => {
    if (packet.type === "ping") pingOut = true;
  });
  session.on("packet", (packet) => {
    if (packet.type !== "pong") return;
    if (pingOut) pingOut = false;
    else onViolation();
  });
}
