/** socket.io client helpers shared by the bench's client processes. */
import type { Socket } from "socket.io-client";

/**
 * Resolves once the client runs on WebSocket. Clients start on polling (protocol.md §1.2: the first
 * handshake MUST use polling) and upgrade; numbers are taken after the upgrade.
 */
export function waitForUpgrade(s: Socket): Promise<void> {
  if (s.io.engine.transport.name === "websocket") return Promise.resolve();
  return new Promise((resolve) => s.io.engine.once("upgrade", () => resolve()));
}
