// @both-transports
// D10: a Computer that does not ack within the relay timeout → 408 {details: {computer_name}};
// client:get_* use the configured relay timeout, client:tool_call its own `timeout` + grace.
// (The timeouts are set small here; the defaults are 30 s and timeout + 5 s.)
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { relayTimeout } from "../../protocol/index.ts";
import { ServerHarness, emitAck, request, type Socket } from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start({ relayTimeoutMs: 150, toolCallGraceMs: 50 });
  agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "silent-pc");
  for (const event of ["client:get_blob", "client:tool_call"]) pc.on(event, () => undefined);
});
after(() => h.close());

void test("get_blob times out at the relay timeout with a flat 408", async () => {
  const started = Date.now();
  const [answer] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "silent-pc", { blob_handle: "h" }),
  );
  assert.deepEqual(answer, relayTimeout("silent-pc"));
  assert.ok(Date.now() - started >= 140);
  assert.equal(h.server.inflight(), 0);
});

void test("tool_call waits its own timeout plus the grace, not the relay timeout", async () => {
  const started = Date.now();
  const [answer] = await emitAck(
    agent,
    "client:tool_call",
    request("agent-1", "silent-pc", { tool_name: "t", params: {}, timeout: 1 }),
  );
  const waited = Date.now() - started;
  assert.deepEqual(answer, relayTimeout("silent-pc"));
  assert.ok(waited >= 1040, `waited ${waited} ms`);
});
