// protocol.md §1.3, D1: no a2c_version → HTTP 400 with the exact flat body, before socket.io.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake } from "../support/server-http.ts";

const EXPECTED = '{"code":400,"message":"Missing a2c_version query parameter"}';
let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("polling handshake without a2c_version is a 400 with the exact body", async () => {
  const res = await pollingHandshake(engineUrl(h.url, h.server.path, ""));
  assert.equal(res.status, 400);
  assert.equal(res.headers["content-type"], "application/json");
  assert.equal(res.headers["content-length"], String(Buffer.byteLength(EXPECTED)));
  assert.equal(res.body.toString("utf8"), EXPECTED);
  assert.equal(res.headers["x-a2c-error-code"], undefined);
});

void test("an empty a2c_version counts as missing", async () => {
  const res = await pollingHandshake(engineUrl(h.url, h.server.path, "a2c_version="));
  assert.equal(res.status, 400);
  assert.equal(res.body.toString("utf8"), EXPECTED);
});

void test("a socket.io client without a2c_version is never admitted", async () => {
  await assert.rejects(h.connect({ version: null }), ConnectRefused);
  assert.equal(h.server.io.of("/smcp").sockets.size, 0);
});
