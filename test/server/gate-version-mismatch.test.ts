// protocol.md §1.3, D1: an incompatible version → 400, X-A2C-Error-Code: 4008, flat 4008 body with
// server_version, client_version, min_supported and max_supported.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake } from "../support/server-http.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

// 0.3.x (every SDK before 0.4.0) and 0.5.0 (the next minor) are refused like any other minor.
for (const client of ["0.2.0", "0.3.0", "0.3.2", "0.5.0", "1.4.0", "0.2.1"]) {
  void test(`client ${client} against server 0.4.0 is a 4008`, async () => {
    const res = await pollingHandshake(engineUrl(h.url, h.server.path, `a2c_version=${client}`));
    assert.equal(res.status, 400);
    assert.equal(res.headers["x-a2c-error-code"], "4008");
    assert.equal(res.headers["content-type"], "application/json");
    assert.equal(res.headers["content-length"], String(res.body.length));
    assert.deepEqual(JSON.parse(res.body.toString("utf8")), {
      code: 4008,
      message: "Protocol version mismatch",
      server_version: "0.4.0",
      client_version: client,
      min_supported: "0.4.0",
      max_supported: "0.4.999",
    });
  });
}

void test("a socket.io client with 0.2.0 is never admitted", async () => {
  await assert.rejects(h.connect({ version: "0.2.0" }), ConnectRefused);
  assert.equal(h.server.io.of("/smcp").sockets.size, 0);
});
