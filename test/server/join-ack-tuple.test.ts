// protocol.md §3.1, D5: a successful server:join_office acks exactly two arguments (true, null);
// server:leave_office acks (true, null) as well. D3: role comes from join_office, never auth.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, emitAck } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("join acks exactly [true, null]", async () => {
  const s = await h.connect();
  const args = await emitAck(s, "server:join_office", {
    role: "agent",
    name: "a",
    office_id: "o1",
  });
  assert.equal(args.length, 2);
  assert.deepEqual(args, [true, null]);
});

void test("leave acks exactly [true, null]", async () => {
  const s = await h.connect();
  await emitAck(s, "server:join_office", { role: "computer", name: "c", office_id: "o2" });
  assert.deepEqual(await emitAck(s, "server:leave_office", { office_id: "o2" }), [true, null]);
});

void test("a role in auth is ignored: the join declares it (D3)", async () => {
  const s = await h.connect({ auth: { role: "agent", office_id: "o9", name: "spoof" } });
  const args = await emitAck(s, "server:join_office", {
    role: "computer",
    name: "pc",
    office_id: "o3",
  });
  assert.deepEqual(args, [true, null]);
  const agent = await h.agent("o3", "ag");
  const [list] = await emitAck(agent, "server:list_room", {
    agent: "ag",
    req_id: "r",
    office_id: "o3",
  });
  const roles = (list as { sessions: { name: string; role: string }[] }).sessions.map(
    (x) => `${x.name}:${x.role}`,
  );
  assert.deepEqual(roles, ["ag:agent", "pc:computer"]);
});
