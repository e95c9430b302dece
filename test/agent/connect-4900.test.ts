/**
 * WebSocket close 4900 (protocol.md §1.4): never reconnected automatically; one polling-only
 * handshake may fetch the 4008 body; failing that, the error carries code 4900 and empty versions.
 *
 * A real socket.io server admits the Agent over polling, lets the upgrade to WebSocket complete,
 * then closes that WebSocket with 4900. What its polling handshakes answer afterwards decides
 * which error the Agent raises: still admitted → code 4900, empty versions; a 400/4008 body → that
 * body's ProtocolVersionError. Either way exactly one polling-only handshake follows the close and
 * socket.io's reconnect loop never runs.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Server } from "socket.io";
import { AgentClient } from "../../agent/client.ts";
import { ProtocolVersionError } from "../../agent/errors.ts";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";

const BODY_4008 = {
  code: 4008,
  message: "Protocol version mismatch",
  server_version: "0.5.0",
  client_version: PROTOCOL_VERSION,
  min_supported: "0.5.0",
  max_supported: "0.5.999",
};

interface Closer {
  url: string;
  /** Engine.IO handshakes (a polling GET without `sid`), by transport list order. */
  handshakes: number;
  /** Set true to answer later handshakes with the 400/4008 refusal. */
  refuse: boolean;
  close(): Promise<void>;
}

/** A socket.io server that closes every upgraded WebSocket with 4900. */
async function startCloser(): Promise<Closer> {
  const http = createServer();
  const io = new Server(http);
  io.of(NAMESPACE); // admits every Agent
  const state: Closer = {
    url: "",
    handshakes: 0,
    refuse: false,
    close: () => new Promise<void>((r) => void io.close(() => r())),
  };
  // engine.io installed its request listener; put ours in front to count and refuse handshakes.
  const engine = http.listeners("request") as ((a: IncomingMessage, b: ServerResponse) => void)[];
  http.removeAllListeners("request");
  http.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    if (q.get("transport") === "polling" && !q.has("sid")) {
      state.handshakes++;
      if (state.refuse) {
        const text = JSON.stringify(BODY_4008);
        res.writeHead(400, {
          "Content-Type": "application/json",
          "Content-Length": Buffer.byteLength(text),
          "X-A2C-Error-Code": "4008",
        });
        res.end(text);
        return;
      }
    }
    for (const l of engine) l.call(http, req, res);
  });
  // Once the client has switched to the WebSocket, close it with the version close code.
  io.engine.on("connection", (conn: EngineConn) => {
    conn.on("upgrade", (transport) => transport.socket.close(4900, "protocol version"));
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return state;
}

interface EngineConn {
  on(
    ev: "upgrade",
    fn: (t: { socket: { close(code: number, reason: string): void } }) => void,
  ): void;
}

/** Connects an Agent (fast reconnect delays, so a reconnect loop would show at once). */
async function connected(url: string): Promise<{ agent: AgentClient; closed: Promise<Error> }> {
  const agent = new AgentClient({ url, reconnectionDelayMs: 5, reconnectionDelayMaxMs: 10 });
  const closed = new Promise<Error>((r) => agent.once("closed", r));
  await agent.connect();
  return { agent, closed };
}

void test("WS close 4900, polling still admitted: ProtocolVersionError 4900, no reconnect", async () => {
  const server = await startCloser();
  const { agent, closed } = await connected(server.url);
  try {
    const err = await closed;
    assert.ok(err instanceof ProtocolVersionError);
    assert.equal(err.code, 4900);
    assert.equal(err.serverVersion, "");
    assert.equal(err.clientVersion, "");
    assert.equal(err.minSupported, "");
    assert.equal(err.maxSupported, "");
    assert.equal(agent.connected, false);
    // The first handshake and one polling-only retry, nothing after.
    assert.equal(server.handshakes, 2);
    // Negative check: give a reconnect loop (5-10 ms delays) ample time to show itself.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(server.handshakes, 2, "no reconnect attempt after the 4900 close");
    await assert.rejects(agent.waitForComputer("pc"), ProtocolVersionError);
  } finally {
    await agent.close();
    await server.close();
  }
});

void test("WS close 4900, polling answers 4008: that body's ProtocolVersionError", async () => {
  const server = await startCloser();
  const { agent, closed } = await connected(server.url);
  server.refuse = true; // from now on the handshake answers the 400/4008 body
  try {
    const err = await closed;
    assert.ok(err instanceof ProtocolVersionError);
    assert.equal(err.code, 4008);
    assert.equal(err.serverVersion, "0.5.0");
    assert.equal(err.clientVersion, PROTOCOL_VERSION);
    assert.equal(err.maxSupported, "0.5.999");
    assert.equal(server.handshakes, 2);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(server.handshakes, 2, "no reconnect attempt after the 4900 close");
  } finally {
    await agent.close();
    await server.close();
  }
});
