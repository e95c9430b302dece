// @both-transports
// A client:* without an ack callback cannot receive an answer: the Server routes nothing and
// stays healthy; server:* events without acks work as usual.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ServerHarness,
  barrier,
  emitAck,
  record,
  request,
  waitFor,
} from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("client:* without an ack is not routed", async () => {
  const agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "pc-1");
  const seen = record(pc);
  for (const event of ["client:get_tools", "client:get_blob", "client:tool_call"]) {
    agent.emit(
      event,
      request("agent-1", "pc-1", { blob_handle: "h", tool_name: "t", params: {}, timeout: 1 }),
    );
  }
  await barrier(agent);
  await barrier(pc);
  assert.deepEqual(seen, []);
  assert.equal(h.server.inflight(), 0);
});

void test("join, leave and update without acks still take effect", async () => {
  const agent = await h.agent("office-2", "agent-2");
  const pc = await h.connect();
  const entered = waitFor(agent, "notify:enter_office");
  pc.emit("server:join_office", { role: "computer", name: "pc-2", office_id: "office-2" });
  await entered;
  const updated = waitFor(agent, "notify:update_skills");
  pc.emit("server:update_skills", { computer: "pc-2" });
  assert.deepEqual(await updated, { computer: "pc-2" });
  const left = waitFor(agent, "notify:leave_office");
  pc.emit("server:leave_office", { office_id: "office-2" });
  await left;
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-2", "pc-2"));
  assert.equal((answer as { code: number }).code, 404);
});
