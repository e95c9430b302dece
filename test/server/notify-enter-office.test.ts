// protocol.md §3.2, D6: on join, the OTHER members receive notify:enter_office with office_id and the
// joiner's agent/computer name; the joiner itself is skipped.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, barrier, record, waitFor } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("members hear a Computer and an Agent join; the joiner hears nothing", async () => {
  const pc1 = await h.computer("office-1", "pc-1");
  const heardPc2 = waitFor(pc1, "notify:enter_office");
  const pc2 = await h.computer("office-1", "pc-2");
  assert.deepEqual(await heardPc2, { office_id: "office-1", computer: "pc-2" });

  const pc2Seen = record(pc2);
  const heardAgent1 = waitFor(pc1, "notify:enter_office");
  const heardAgent2 = waitFor(pc2, "notify:enter_office");
  const agent = await h.agent("office-1", "agent-1");
  const agentSeen = record(agent);
  assert.deepEqual(await heardAgent1, { office_id: "office-1", agent: "agent-1" });
  assert.deepEqual(await heardAgent2, { office_id: "office-1", agent: "agent-1" });
  await barrier(agent);
  await barrier(pc2);
  assert.deepEqual(agentSeen, []);
  assert.deepEqual(
    pc2Seen.map((e) => e.event),
    ["notify:enter_office"],
    "pc-2 heard the Agent only, never its own join",
  );
});
