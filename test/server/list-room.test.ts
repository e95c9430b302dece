// protocol.md §3.3: the admitted a2c_version shows in server:list_room's SessionInfo; list_room answers
// for the caller's own office only (4104 otherwise), for its Agent only (403), 4103 outside offices.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, emitAck, type Socket } from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
let pc: Socket;
before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-a", "agent-a", { version: "0.4.0" });
  pc = await h.computer("office-a", "pc-a", { version: "0.4.5" });
  await h.computer("office-b", "pc-b");
});
after(() => h.close());

void test("sessions carry each member's admitted a2c_version", async () => {
  const [answer] = await emitAck(agent, "server:list_room", {
    agent: "agent-a",
    req_id: "list-1",
    office_id: "office-a",
  });
  assert.deepEqual(answer, {
    req_id: "list-1",
    sessions: [
      {
        sid: agent.id,
        name: "agent-a",
        role: "agent",
        office_id: "office-a",
        a2c_version: "0.4.0",
      },
      { sid: pc.id, name: "pc-a", role: "computer", office_id: "office-a", a2c_version: "0.4.5" },
    ],
  });
});

void test("listing another office is refused with 4104", async () => {
  const [answer] = await emitAck(agent, "server:list_room", {
    agent: "agent-a",
    req_id: "list-2",
    office_id: "office-b",
  });
  assert.equal((answer as { code: number }).code, 4104);
});

void test("a Computer may not list (403); a socket outside any office gets 4103", async () => {
  const req = { agent: "x", req_id: "list-3", office_id: "office-a" };
  assert.equal(((await emitAck(pc, "server:list_room", req))[0] as { code: number }).code, 403);
  const loner = await h.connect();
  assert.equal(((await emitAck(loner, "server:list_room", req))[0] as { code: number }).code, 4103);
});
