// protocol.md §3.4: no notify:* for office A is ever delivered to a member of office B — joins, leaves,
// disconnects, update_* and tool_call_cancel in A leave B's members with nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, barrier, emitAck, record, waitFor } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("office B hears nothing of office A", async () => {
  const agentB = await h.agent("office-b", "agent-b");
  const pcB = await h.computer("office-b", "pc-b");
  const seenAgentB = record(agentB);
  const seenPcB = record(pcB);

  const agentA = await h.agent("office-a", "agent-a");
  const pcA = await h.computer("office-a", "pc-a");
  const pcA2 = await h.computer("office-a", "pc-a2");
  for (const event of [
    "server:update_skills",
    "server:update_tool_list",
    "server:update_config",
    "server:update_desktop",
  ]) {
    const heard = waitFor(agentA, event.replace("server:", "notify:"));
    await emitAck(pcA, event, { computer: "pc-a" });
    await heard;
  }
  const cancelled = waitFor(pcA, "notify:tool_call_cancel");
  await emitAck(agentA, "server:tool_call_cancel", { agent: "agent-a", req_id: "r-1" });
  await cancelled;
  await emitAck(pcA2, "server:leave_office", { office_id: "office-a" });
  const gone = waitFor(agentA, "notify:leave_office");
  pcA.disconnect();
  await gone;

  await barrier(agentB);
  await barrier(pcB);
  assert.deepEqual(seenAgentB, []);
  assert.deepEqual(seenPcB, []);
});
