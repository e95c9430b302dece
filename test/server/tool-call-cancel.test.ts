// protocol.md §2.5, D6: server:tool_call_cancel {agent, req_id} from the office's Agent →
// notify:tool_call_cancel with the same payload to the office's Computers; the Agent's requested
// ack is empty (no payload). Cancels from non-Agents or under another name are dropped.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ServerHarness,
  emitAck,
  record,
  waitFor,
  type Recorded,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
let pc1: Socket;
let pc2: Socket;
let seenElsewhere: Recorded[];
before(async () => {
  h = await ServerHarness.start();
  pc1 = await h.computer("office-1", "pc-1");
  pc2 = await h.computer("office-1", "pc-2");
  agent = await h.agent("office-1", "agent-1");
  seenElsewhere = record(await h.computer("office-2", "pc-x"));
});
after(() => h.close());

void test("every Computer of the office hears the cancel with the same payload", async () => {
  const payload = { agent: "agent-1", req_id: "call-42" };
  const at1 = waitFor(pc1, "notify:tool_call_cancel");
  const at2 = waitFor(pc2, "notify:tool_call_cancel");
  const seenAgent = record(agent);
  const ack = await emitAck(agent, "server:tool_call_cancel", payload);
  assert.deepEqual(ack, [], "the Agent gets no ack payload");
  assert.deepEqual(await at1, payload);
  assert.deepEqual(await at2, payload);
  await h.barrierAll();
  assert.deepEqual(seenAgent, [], "the sender is skipped");
  assert.deepEqual(seenElsewhere, []);
});

void test("a cancel without an ack callback is delivered too", async () => {
  const at1 = waitFor(pc1, "notify:tool_call_cancel");
  agent.emit("server:tool_call_cancel", { agent: "agent-1", req_id: "call-43" });
  assert.deepEqual(await at1, { agent: "agent-1", req_id: "call-43" });
});

void test("cancels from a Computer or naming another agent are dropped", async () => {
  const seen1 = record(pc1);
  assert.deepEqual(
    await emitAck(pc2, "server:tool_call_cancel", { agent: "agent-1", req_id: "x" }),
    [],
  );
  assert.deepEqual(
    await emitAck(agent, "server:tool_call_cancel", { agent: "someone-else", req_id: "y" }),
    [],
  );
  await h.barrierAll();
  assert.deepEqual(seen1, []);
});
