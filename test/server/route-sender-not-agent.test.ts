// D8: a client:* from a member that is not the office's Agent (a Computer) → 403, not delivered.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CLIENT_EVENTS, forbidden } from "../../protocol/index.ts";
import { ServerHarness, barrier, emitAck, record, request } from "../support/server-harness.ts";

const extra: Record<string, Record<string, unknown>> = {
  "client:get_tools": {},
  "client:get_skills": {},
  "client:get_skill": { name: "s" },
  "client:get_blob": { blob_handle: "h" },
  "client:tool_call": { tool_name: "t", params: {}, timeout: 5 },
};

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("a Computer cannot route to another Computer of its office", async () => {
  await h.agent("office-1", "agent-1");
  const target = await h.computer("office-1", "pc-target");
  const seen = record(target);
  const sender = await h.computer("office-1", "pc-sender");
  for (const event of CLIENT_EVENTS) {
    for (const name of ["pc-target", "missing"]) {
      const [answer] = await emitAck(sender, event, request("agent-1", name, extra[event]));
      assert.deepEqual(answer, forbidden(), `${event} → ${name}`);
    }
  }
  await barrier(target);
  assert.deepEqual(
    seen.filter((e) => e.event.startsWith("client:")),
    [],
  );
});
