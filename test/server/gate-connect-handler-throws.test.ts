// protocol.md §1.3: the version gate still refuses when the connect-time code behind it throws — the
// gate runs on raw HTTP before socket.io. The failing provider never crashes the Server either.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake, websocketUpgrade } from "../support/server-http.ts";
import type { AuthProvider } from "../../server/auth.ts";

let calls = 0;
const throwing: AuthProvider = {
  name: "throwing",
  authenticate() {
    calls += 1;
    throw new Error("provider bug");
  },
};

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start({ auth: throwing });
});
after(() => h.close());

void test("an incompatible polling client still gets the 4008 refusal", async () => {
  const res = await pollingHandshake(engineUrl(h.url, h.server.path, "a2c_version=0.2.0"));
  assert.equal(res.status, 400);
  assert.equal(res.headers["x-a2c-error-code"], "4008");
});

void test("an incompatible WebSocket-only client still gets the 4008 refusal", async () => {
  const res = await websocketUpgrade(h.url, h.server.path, "a2c_version=0.2.0");
  assert.equal(res.status, 400);
  assert.equal(res.headers["x-a2c-error-code"], "4008");
});

void test("incompatible clients never reach the connect-time code", async () => {
  const before = calls;
  await assert.rejects(h.connect({ version: "0.2.0" }), ConnectRefused);
  await assert.rejects(h.connect({ version: "0.2.0", transports: ["websocket"] }), ConnectRefused);
  assert.equal(calls, before);
});

void test("a compatible client reaching the throwing code gets a flat 500, the Server lives", async () => {
  const err = await h.connect().then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectRefused);
  assert.equal((err.data as { code: number }).code, 500);
  const health = await fetch(`${h.url}/healthz`);
  assert.equal(health.status, 200);
});
