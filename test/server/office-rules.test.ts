// D5: Computer names are unique within an office (the same name elsewhere is fine); an Agent in
// office A must leave A before joining B; a connection keeps the role of its first join; joining
// the office one is in, under the same name, is a no-op; leaving an office one is not in is too.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, barrier, emitAck, joinOffice, record } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("a second Computer with the same name in the same office is refused", async () => {
  await h.computer("office-1", "pc-1");
  const dup = await h.connect();
  const [ok, reason] = await joinOffice(dup, {
    role: "computer",
    name: "pc-1",
    office_id: "office-1",
  });
  assert.equal(ok, false);
  assert.match(reason as string, /pc-1/);
  await h.computer("office-2", "pc-1"); // another office: fine
});

void test("an Agent in office A must leave before joining B", async () => {
  const agent = await h.agent("office-a", "agent-1");
  const [ok, reason] = await joinOffice(agent, {
    role: "agent",
    name: "agent-1",
    office_id: "office-b",
  });
  assert.equal(ok, false);
  assert.ok((reason as string).length > 0);
  assert.deepEqual(await emitAck(agent, "server:leave_office", { office_id: "office-a" }), [
    true,
    null,
  ]);
  assert.deepEqual(
    await joinOffice(agent, { role: "agent", name: "agent-1", office_id: "office-b" }),
    [true, null],
  );
});

void test("a connection cannot change role, even after leaving", async () => {
  const s = await h.computer("office-r", "pc-r");
  assert.equal(
    (await joinOffice(s, { role: "agent", name: "ag", office_id: "office-r" }))[0],
    false,
  );
  await emitAck(s, "server:leave_office", { office_id: "office-r" });
  assert.equal(
    (await joinOffice(s, { role: "agent", name: "ag", office_id: "office-s" }))[0],
    false,
  );
  assert.deepEqual(await joinOffice(s, { role: "computer", name: "pc-r", office_id: "office-s" }), [
    true,
    null,
  ]);
});

void test("re-joining the same office under the same name is a silent no-op", async () => {
  const agent = await h.agent("office-n", "agent-n");
  const pc = await h.computer("office-n", "pc-n");
  const seen = record(agent);
  assert.deepEqual(
    await joinOffice(pc, { role: "computer", name: "pc-n", office_id: "office-n" }),
    [true, null],
  );
  const [ok] = await joinOffice(pc, {
    role: "computer",
    name: "pc-renamed",
    office_id: "office-n",
  });
  assert.equal(ok, false, "a rename in place is refused");
  await barrier(agent);
  assert.deepEqual(seen, []);
});

void test("leaving an office one is not in changes nothing", async () => {
  const agent = await h.agent("office-l", "agent-l");
  const pc = await h.computer("office-l", "pc-l");
  const seen = record(agent);
  assert.deepEqual(await emitAck(pc, "server:leave_office", { office_id: "elsewhere" }), [
    true,
    null,
  ]);
  await barrier(agent);
  assert.deepEqual(seen, []);
});
