// protocol.md §1.3, D1: an a2c_version that is not exactly three integers → 400 "Invalid a2c_version…".
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake } from "../support/server-http.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

for (const bad of ["abc", "0.3", "0.3.0.1", "0.3.0-dev", "v0.3.0", "%200.3.0", "0.3.x", "-1.3.0"]) {
  void test(`a2c_version=${bad} is a 400 "Invalid a2c_version"`, async () => {
    const res = await pollingHandshake(engineUrl(h.url, h.server.path, `a2c_version=${bad}`));
    assert.equal(res.status, 400);
    assert.equal(res.headers["content-type"], "application/json");
    const body = JSON.parse(res.body.toString("utf8"));
    assert.equal(body.code, 400);
    assert.match(body.message, /^Invalid a2c_version/);
    assert.deepEqual(Object.keys(body).sort(), ["code", "message"]);
    assert.equal(res.headers["x-a2c-error-code"], undefined);
  });
}

void test("a huge a2c_version is refused without echoing it whole", async () => {
  const res = await pollingHandshake(
    engineUrl(h.url, h.server.path, `a2c_version=${"9".repeat(5000)}`),
  );
  assert.equal(res.status, 400);
  assert.ok(res.body.length < 300, `body is ${res.body.length} bytes`);
});
