// protocol.md §3.4, D8: a client:* from a socket that has not joined an office (or has left it) is
// answered 4103 and never delivered to any Computer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CLIENT_EVENTS, notInOffice } from "../../protocol/index.ts";
import {
  ServerHarness,
  barrier,
  emitAck,
  record,
  request,
  type Recorded,
  type Socket,
} from "../support/server-harness.ts";

const extra: Record<string, Record<string, unknown>> = {
  "client:get_tools": {},
  "client:get_skills": {},
  "client:get_skill": { name: "s" },
  "client:get_blob": { blob_handle: "h" },
  "client:tool_call": { tool_name: "t", params: {}, timeout: 5 },
};

let h: ServerHarness;
let pc: Socket;
let seen: Recorded[];
before(async () => {
  h = await ServerHarness.start();
  pc = await h.computer("office-1", "pc-1");
  seen = record(pc);
});
after(() => h.close());

void test("a socket that never joined gets 4103 for every event", async () => {
  const loner = await h.connect();
  for (const event of CLIENT_EVENTS) {
    const [answer] = await emitAck(loner, event, request("agent-1", "pc-1", extra[event]));
    assert.deepEqual(answer, notInOffice(), event);
  }
});

void test("an Agent that left its office gets 4103", async () => {
  const agent = await h.agent("office-1", "agent-1");
  await emitAck(agent, "server:leave_office", { office_id: "office-1" });
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  assert.deepEqual(answer, notInOffice());
});

void test("the Computer received none of it", async () => {
  await barrier(pc);
  assert.deepEqual(
    seen.filter((e) => e.event.startsWith("client:")),
    [],
  );
});
