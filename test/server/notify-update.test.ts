// protocol.md §3.2, D6: server:update_skills|tool_list|config|desktop {computer} from a Computer →
// the matching notify:* to its office (Agent and other Computers), sender skipped, nothing to
// other offices. Only a Computer in an office, under its own name, may announce. A requested
// ack is empty.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ServerHarness,
  barrier,
  emitAck,
  record,
  waitFor,
  type Recorded,
  type Socket,
} from "../support/server-harness.ts";

const EVENTS = ["update_skills", "update_tool_list", "update_config", "update_desktop"];
let h: ServerHarness;
let agent: Socket;
let pc: Socket;
let pc2: Socket;
let seenPc: Recorded[];
let seenOther: Recorded[];
before(async () => {
  h = await ServerHarness.start();
  const otherAgent = await h.agent("office-2", "agent-2");
  seenOther = record(otherAgent);
  pc = await h.computer("office-1", "pc-1");
  pc2 = await h.computer("office-1", "pc-2");
  agent = await h.agent("office-1", "agent-1");
  seenPc = record(pc);
});
after(() => h.close());

for (const name of EVENTS) {
  void test(`server:${name} → notify:${name} to the office, empty ack`, async () => {
    const toAgent = waitFor(agent, `notify:${name}`);
    const toPc2 = waitFor(pc2, `notify:${name}`);
    const ack = await emitAck(pc, `server:${name}`, { computer: "pc-1" });
    assert.deepEqual(ack, []);
    assert.deepEqual(await toAgent, { computer: "pc-1" });
    assert.deepEqual(await toPc2, { computer: "pc-1" });
  });
}

void test("refused announcements: another name, an Agent sender, a socket outside offices", async () => {
  const seenAgent = record(agent);
  assert.deepEqual(await emitAck(pc, "server:update_skills", { computer: "pc-2" }), []);
  assert.deepEqual(await emitAck(agent, "server:update_skills", { computer: "agent-1" }), []);
  const loner = await h.connect();
  assert.deepEqual(await emitAck(loner, "server:update_skills", { computer: "pc-1" }), []);
  await h.barrierAll();
  assert.deepEqual(seenAgent, []);
});

void test("the sender and other offices heard nothing", async () => {
  await barrier(pc);
  assert.deepEqual(
    seenPc.filter((e) => e.event.startsWith("notify:update")),
    [],
  );
  await h.barrierAll();
  assert.deepEqual(
    seenOther.map((e) => e.event),
    [],
  );
});
