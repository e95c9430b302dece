// protocol.md §3.1, D5: a second Agent joining an office that has one → (false, <non-empty string>);
// the first Agent is unaffected (still joined, still routed to, hears nothing about it).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ServerHarness,
  barrier,
  emitAck,
  record,
  request,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let first: Socket;
before(async () => {
  h = await ServerHarness.start();
  first = await h.agent("office-1", "agent-1");
});
after(() => h.close());

void test("the second Agent is refused and the first keeps working", async () => {
  const seen = record(first);
  const second = await h.connect();
  const [ok, reason] = await emitAck(second, "server:join_office", {
    role: "agent",
    name: "agent-2",
    office_id: "office-1",
  });
  assert.equal(ok, false);
  assert.equal(typeof reason, "string");
  assert.ok((reason as string).length > 0);

  const pc = await h.computer("office-1", "pc-1");
  pc.on("client:get_tools", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack({ tools: [], req_id: req.req_id }),
  );
  const [answer] = await emitAck(first, "client:get_tools", request("agent-1", "pc-1"));
  assert.deepEqual((answer as { tools: unknown[] }).tools, []);
  // The refused Agent is not in the office: it cannot route.
  const [refused] = await emitAck(second, "client:get_tools", request("agent-2", "pc-1"));
  assert.equal((refused as { code: number }).code, 4103);
  await barrier(first);
  assert.deepEqual(
    seen.map((e) => e.event),
    ["notify:enter_office"],
    "the first Agent only heard the Computer join",
  );
});

void test("the same name does not help: still refused", async () => {
  const other = await h.connect();
  const [ok] = await emitAck(other, "server:join_office", {
    role: "agent",
    name: "agent-1",
    office_id: "office-1",
  });
  assert.equal(ok, false);
});
