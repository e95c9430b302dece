/**
 * The client libraries whose behaviour the transport's fast paths change, as installed:
 * socket.io-client's `Manager`, engine.io-client's `Socket` and Node WebSocket transport, and the
 * `ws` package engine.io-client itself loads (resolved from engine.io-client's own folder, so a
 * probe sees the very classes its transports use, not another copy). socket.io-client and
 * engine.io-client are pinned to exact versions in package.json; engine.io-client pins `ws` to
 * one minor version. Every probe in this folder checks what it relies on in these, at start.
 */
import { createRequire } from "node:module";
import { NodeWebSocket, Socket as EngineSocket } from "engine.io-client";
import { Manager } from "socket.io-client";

export { EngineSocket, Manager, NodeWebSocket };

/** The members of `ws` the fast paths rely on (ws 8). */
export interface WsModule {
  readonly Sender: {
    readonly prototype: { readonly dispatch?: unknown };
    frame?: (data: Buffer, options: Record<string, unknown>) => Buffer[];
  };
  readonly WebSocket: { readonly prototype: object };
}

let ws: WsModule | string | undefined;

/** The `ws` module engine.io-client loads, or why it cannot be loaded. */
export function engineWs(): WsModule | string {
  if (ws === undefined) {
    try {
      const fromHere = createRequire(import.meta.url);
      ws = createRequire(fromHere.resolve("engine.io-client"))("ws") as WsModule;
    } catch (err) {
      ws = `ws cannot be loaded from engine.io-client (${(err as Error).message})`;
    }
  }
  return ws;
}

/** The parts of an engine.io-client Socket (`manager.engine`) the fast paths read. */
export interface ClientEngine {
  readonly transport?: unknown;
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
  on(event: "drain" | "close", listener: () => void): unknown;
}

/** The parts of a socket.io-client Manager (`socket.io`) the fast paths read. */
export interface ClientManager {
  readonly engine?: ClientEngine;
  on(event: "open", listener: () => void): unknown;
}

/**
 * Calls `fn` with every transport `manager`'s engines use: the one each (re)opened engine starts
 * with and the one it upgrades to.
 */
export function onEveryTransport(manager: ClientManager, fn: (transport: unknown) => void): void {
  manager.on("open", () => {
    const engine = manager.engine;
    if (!engine) return;
    fn(engine.transport);
    engine.on("upgrade", fn);
  });
}

/** `transport` is engine.io-client's WebSocket transport. */
export function isWebSocketTransport(transport: unknown): boolean {
  return (transport as { name?: unknown } | null | undefined)?.name === "websocket";
}
