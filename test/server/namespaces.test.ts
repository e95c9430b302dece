// D2: every event lives in /smcp; the main namespace and any other are refused. The Engine.IO
// path is configurable, and the version gate follows it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake } from "../support/server-http.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start({ path: "/smcp-engine" });
});
after(() => h.close());

for (const namespace of ["/", "/other", "/smcp2"]) {
  void test(`namespace ${namespace} is refused`, async () => {
    await assert.rejects(h.connect({ namespace }), ConnectRefused);
  });
}

void test("/smcp on the configured path connects", async () => {
  assert.equal(h.server.path, "/smcp-engine/");
  assert.ok((await h.connect()).connected);
});

void test("the gate guards the configured path; the default path is not served", async () => {
  const gated = await pollingHandshake(engineUrl(h.url, "/smcp-engine/", "a2c_version=0.2.0"));
  assert.equal(gated.status, 400);
  assert.equal(gated.headers["x-a2c-error-code"], "4008");
  const other = await pollingHandshake(engineUrl(h.url, "/socket.io/", "a2c_version=0.4.0"));
  assert.equal(other.status, 404);
});
