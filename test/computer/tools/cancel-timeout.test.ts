/**
 * Cancel and timeout of `client:tool_call` (docs/protocol.md, tool_call): cancel aborts
 * the matching in-flight call and MCP `notifications/cancelled` reaches the server; the ack carries
 * `meta.a2c_cancelled`; a timeout carries `meta.a2c_timeout`; an unknown req_id does nothing.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { nextReqId, textOf, toolFixture, type ToolFixture } from "../../support/tools-harness.ts";

let fx: ToolFixture;
before(async () => {
  fx = await toolFixture();
});
after(() => fx.close());

async function cancelledCount(): Promise<number> {
  return Number(textOf(await fx.call("demo__cancelled_count")));
}

void test("cancel aborts the call: isError + meta.a2c_cancelled, server told", async () => {
  const before = await cancelledCount();
  const reqId = nextReqId();
  const pending = fx.call("demo__slow", { ms: 60_000 }, 120, reqId);
  // Cancel once the request is really in flight at the MCP server: a second call answering proves
  // the first was sent (stdio is ordered) — no sleeps.
  await fx.call("demo__echo", { text: "ping" });
  fx.service.cancel?.(reqId);
  const r = await pending;
  assert.equal(r.isError, true);
  assert.deepEqual(r.meta, { a2c_cancelled: true, a2c_cancel_reason: "agent_requested" });
  assert.ok(!("_meta" in r));
  // notifications/cancelled went downstream: the demo server's slow handler saw its abort.
  let after = await cancelledCount();
  while (after === before) after = await cancelledCount();
  assert.equal(after, before + 1);
});

void test("an unknown or finished req_id is a silent no-op", async () => {
  const reqId = nextReqId();
  const r = await fx.call("demo__echo", { text: "done" }, 30, reqId);
  assert.equal(textOf(r), "done");
  assert.doesNotThrow(() => fx.service.cancel?.(reqId));
  assert.doesNotThrow(() => fx.service.cancel?.("never-seen"));
  // A call in flight under another id is not affected.
  const other = nextReqId();
  const pending = fx.call("demo__slow", { ms: 200 }, 30, other);
  fx.service.cancel?.("never-seen-either");
  const ok = await pending;
  assert.notEqual(ok.isError, true);
  assert.equal(textOf(ok), "done after 200 ms");
});

void test("timeout: isError + meta.a2c_timeout, and the server is told to stop", async () => {
  const before = await cancelledCount();
  const r = await fx.call("demo__slow", { ms: 60_000 }, 1);
  assert.equal(r.isError, true);
  assert.deepEqual(r.meta, { a2c_timeout: true });
  assert.match(textOf(r), /timeout/i);
  let after = await cancelledCount();
  while (after === before) after = await cancelledCount();
  assert.equal(after, before + 1);
});
