// protocol.md §1.3, D1: a WebSocket-only upgrade that fails the gate gets the same raw HTTP 400 as the
// polling handshake (byte-identical body, same A2C header) and is never admitted.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake, websocketUpgrade } from "../support/server-http.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

for (const query of ["a2c_version=0.2.0", "a2c_version=abc", ""]) {
  void test(`direct upgrade with "${query}" gets the polling refusal byte for byte`, async () => {
    const ws = await websocketUpgrade(h.url, h.server.path, query);
    const polling = await pollingHandshake(engineUrl(h.url, h.server.path, query));
    assert.equal(ws.status, 400);
    assert.equal(polling.status, 400);
    assert.ok(ws.body.equals(polling.body), `${ws.body.toString()} vs ${polling.body.toString()}`);
    assert.equal(ws.headers["content-type"], "application/json");
    assert.equal(ws.headers["content-length"], String(ws.body.length));
    assert.equal(ws.headers["x-a2c-error-code"], polling.headers["x-a2c-error-code"]);
  });
}

void test("the 4008 upgrade refusal carries the header and the version fields", async () => {
  const ws = await websocketUpgrade(h.url, h.server.path, "a2c_version=0.2.0");
  assert.equal(ws.headers["x-a2c-error-code"], "4008");
  assert.equal(JSON.parse(ws.body.toString()).client_version, "0.2.0");
});

void test("a compatible direct upgrade switches protocols", async () => {
  const ws = await websocketUpgrade(h.url, h.server.path, "a2c_version=0.4.0");
  assert.equal(ws.status, 101);
});

void test("a socket.io client with transports [websocket] and 0.2.0 is never admitted", async () => {
  const refused = await h.connect({ version: "0.2.0", transports: ["websocket"] }).then(
    () => null,
    (err: unknown) => err,
  );
  assert.ok(refused instanceof ConnectRefused);
  assert.equal(h.server.io.of("/smcp").sockets.size, 0);
});
