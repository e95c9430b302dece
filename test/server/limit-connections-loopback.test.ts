// Loopback peers are exempt from the per-address connection limit unless told otherwise: they are
// this host (the tests, the stack, a same-host reverse proxy that carries every client), so one
// shared address must not cap the whole deployment. They are still counted for the gauge.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import { ServerHarness } from "../support/server-harness.ts";
import { engineUrl, pollingHandshake } from "../support/server-http.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start({ maxConnectionsPerIp: 1 });
});
after(() => h.close());

void test("a limit of 1 does not refuse a second session from 127.0.0.1", async () => {
  const url = engineUrl(h.url, h.server.path, `a2c_version=${PROTOCOL_VERSION}`);
  for (let i = 0; i < 3; i++) assert.equal((await pollingHandshake(url)).status, 200);
  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(metrics, /^a2c_sessions_per_ip_max 3$/m);
  assert.doesNotMatch(metrics, /a2c_limit_refusals_total\{/);
  // Leave the half-open sessions to the Server's close (the harness closes it).
});
