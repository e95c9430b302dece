import assert from "node:assert/strict";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Server } from "socket.io";
import { AgentClient } from "../../agent/client.ts";
import { AuthError, ConnectError, ProtocolVersionError } from "../../agent/errors.ts";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";
import { startFakeServer } from "../support/agent-fake-computer.ts";

void test("handshake: a2c_version from the SDK constant, polling first, token in auth, no role", async () => {
  const fake = await startFakeServer();
  const agent = new AgentClient({ url: fake.url, token: "s3cret" });
  try {
    await agent.connect();
    const hs = fake.handshakes[0]!;
    assert.equal(hs.query.a2c_version, PROTOCOL_VERSION);
    assert.equal(hs.transport, "polling");
    assert.deepEqual(hs.auth, { token: "s3cret" });
    assert.equal("role" in hs.auth, false);
  } finally {
    await agent.close();
    await fake.close();
  }
});

void test("4008: connect fails fast with ProtocolVersionError, disconnects, never retries", async () => {
  let requests = 0;
  const body = {
    code: 4008,
    message: "Protocol version mismatch",
    server_version: "0.5.0",
    client_version: PROTOCOL_VERSION,
    min_supported: "0.5.0",
    max_supported: "0.5.999",
  };
  const http = createServer((req, res) => {
    requests++;
    const text = JSON.stringify(body);
    res.writeHead(400, {
      "Content-Type": "application/json",
      "Content-Length": Buffer.byteLength(text),
      "X-A2C-Error-Code": "4008",
    });
    res.end(text);
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const agent = new AgentClient({ url, reconnectionDelayMs: 5, reconnectionDelayMaxMs: 10 });
  try {
    await assert.rejects(agent.connect(), (err: unknown) => {
      assert.ok(err instanceof ProtocolVersionError);
      assert.equal(err.code, 4008);
      assert.equal(err.serverVersion, "0.5.0");
      assert.equal(err.clientVersion, PROTOCOL_VERSION);
      assert.equal(err.minSupported, "0.5.0");
      assert.equal(err.maxSupported, "0.5.999");
      return true;
    });
    assert.equal(agent.connected, false);
    // Negative check: give a reconnect loop (5-10 ms delays) ample time to show itself.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(requests, 1, "exactly one handshake request, no reconnect attempt");
  } finally {
    await agent.close();
    await new Promise<void>((r) => http.close(() => r()));
  }
});

void test("401 from the auth middleware: AuthError", async () => {
  const http = createServer();
  const io = new Server(http);
  io.of(NAMESPACE).use((_socket, next) => {
    const err = new Error("Unauthorized") as Error & { data?: unknown };
    err.data = { code: 401, message: "Unauthorized" };
    next(err);
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const agent = new AgentClient({ url, token: "wrong" });
  try {
    await assert.rejects(agent.connect(), AuthError);
    assert.equal(agent.connected, false);
  } finally {
    await agent.close();
    await new Promise<void>((r) => void io.close(() => r()));
  }
});

void test("nothing listening: ConnectError", async () => {
  const http = createServer();
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  const port = (http.address() as AddressInfo).port;
  await new Promise<void>((r) => http.close(() => r()));
  const url = `http://127.0.0.1:${port}`;
  const agent = new AgentClient({ url });
  await assert.rejects(agent.connect(), (err: unknown) => {
    assert.ok(err instanceof ConnectError);
    assert.equal(err.message, `cannot connect to ${url}: connection refused (ECONNREFUSED)`);
    assert.deepEqual(
      { url: err.url, reason: err.reason, systemCode: err.systemCode, status: err.status },
      { url, reason: "refused", systemCode: "ECONNREFUSED", status: undefined },
    );
    return true;
  });
  await agent.close();
});

void test("a URL without a scheme: ConnectError invalid_url, nothing sent", async () => {
  const agent = new AgentClient({ url: "127.0.0.1:7100" });
  await assert.rejects(agent.connect(), (err: unknown) => {
    assert.ok(err instanceof ConnectError);
    assert.equal(err.reason, "invalid_url");
    assert.equal(err.message, "cannot connect to 127.0.0.1:7100: not an http:// or https:// URL");
    return true;
  });
  await agent.close();
});

void test("4008 from the real Server (declaring 0.5.0): ProtocolVersionError, one handshake", async () => {
  const { ServerHarness } = await import("../support/server-harness.ts");
  const h = await ServerHarness.start({ protocolVersion: "0.5.0" });
  // A counting HTTP proxy in front of the Server sees every handshake request.
  let handshakes = 0;
  const target = new URL(h.url);
  const proxy = createServer((req, res) => {
    handshakes++;
    const fwd = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(fwd);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const agent = new AgentClient({
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    token: "harness-token-0123456789",
    reconnectionDelayMs: 5,
    reconnectionDelayMaxMs: 10,
  });
  try {
    await assert.rejects(agent.connect(), (err: unknown) => {
      assert.ok(err instanceof ProtocolVersionError);
      assert.equal(err.serverVersion, "0.5.0");
      assert.equal(err.clientVersion, PROTOCOL_VERSION);
      return true;
    });
    // Negative check: give a reconnect loop (5-10 ms delays) ample time to show itself.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(handshakes, 1);
  } finally {
    await agent.close();
    await new Promise<void>((r) => proxy.close(() => r()));
    await h.close();
  }
});
