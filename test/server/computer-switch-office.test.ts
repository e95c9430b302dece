// protocol.md §3.1, D5: a Computer in office A joining office B leaves A first: A's members receive
// notify:leave_office{office_id: A, computer}, B's members notify:enter_office{office_id: B,
// computer}; afterwards it is routable in B only.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ServerHarness,
  emitAck,
  request,
  waitFor,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agentA: Socket;
let agentB: Socket;
let pc: Socket;
before(async () => {
  h = await ServerHarness.start();
  agentA = await h.agent("office-a", "agent-a");
  agentB = await h.agent("office-b", "agent-b");
  pc = await h.computer("office-a", "pc-1");
});
after(() => h.close());

void test("A hears the leave, B hears the enter, routing follows the Computer", async () => {
  // Observe the order in which the Server broadcasts (the two notifications go to different
  // sockets, so their arrival order at the clients proves nothing).
  const adapter = h.server.io.of("/smcp").adapter;
  const broadcasts: string[] = [];
  const original = adapter.broadcast.bind(adapter);
  adapter.broadcast = (packet, opts) => {
    broadcasts.push(`${String(packet.data[0])} → ${[...opts.rooms].join(",")}`);
    original(packet, opts);
  };
  const leftA = waitFor(agentA, "notify:leave_office");
  const enteredB = waitFor(agentB, "notify:enter_office");
  const ack = await emitAck(pc, "server:join_office", {
    role: "computer",
    name: "pc-1",
    office_id: "office-b",
  });
  assert.deepEqual(ack, [true, null]);
  assert.deepEqual(await leftA, { office_id: "office-a", computer: "pc-1" });
  assert.deepEqual(await enteredB, { office_id: "office-b", computer: "pc-1" });
  adapter.broadcast = original;
  assert.deepEqual(broadcasts, [
    "notify:leave_office → office:office-a",
    "notify:enter_office → office:office-b",
  ]);

  pc.on("client:get_tools", (req: { req_id: string }, ackFn: (a: unknown) => void) =>
    ackFn({ tools: [], req_id: req.req_id }),
  );
  const [fromA] = await emitAck(agentA, "client:get_tools", request("agent-a", "pc-1"));
  assert.equal((fromA as { code: number }).code, 404);
  const [fromB] = await emitAck(agentB, "client:get_tools", request("agent-b", "pc-1"));
  assert.deepEqual((fromB as { tools: unknown[] }).tools, []);
});

void test("a refused switch leaves the Computer where it was", async () => {
  const taken = await h.computer("office-c", "pc-2");
  const mover = await h.computer("office-a", "pc-2");
  const [ok] = await emitAck(mover, "server:join_office", {
    role: "computer",
    name: "pc-2",
    office_id: "office-c",
  });
  assert.equal(ok, false);
  mover.on("client:get_tools", (req: { req_id: string }, ackFn: (a: unknown) => void) =>
    ackFn({ tools: [], req_id: req.req_id }),
  );
  const [answer] = await emitAck(agentA, "client:get_tools", request("agent-a", "pc-2"));
  assert.deepEqual((answer as { tools: unknown[] }).tools, []);
  assert.ok(taken.connected);
});
