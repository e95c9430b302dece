// protocol.md §3.2: on leave or disconnect the remaining members receive notify:leave_office for the
// departed member; the departed one is no longer listed or routable.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, emitAck, request, waitFor } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("an explicit leave is announced to the others", async () => {
  const agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "pc-1");
  const heard = waitFor(agent, "notify:leave_office");
  assert.deepEqual(await emitAck(pc, "server:leave_office", { office_id: "office-1" }), [
    true,
    null,
  ]);
  assert.deepEqual(await heard, { office_id: "office-1", computer: "pc-1" });
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  assert.equal((answer as { code: number }).code, 404);
});

void test("a disconnect is announced to the others", async () => {
  const pc = await h.computer("office-2", "pc-2");
  const agent = await h.agent("office-2", "agent-2");
  const heard = waitFor(pc, "notify:leave_office");
  agent.disconnect();
  assert.deepEqual(await heard, { office_id: "office-2", agent: "agent-2" });
  // The office has no Agent now: a new one may join.
  await h.agent("office-2", "agent-3");
});

void test("an Agent's leave frees the office for another Agent", async () => {
  const first = await h.agent("office-3", "agent-x");
  assert.deepEqual(await emitAck(first, "server:leave_office", { office_id: "office-3" }), [
    true,
    null,
  ]);
  await h.agent("office-3", "agent-y");
});
