// @both-transports
// protocol.md §2.4, D12: the Agent disconnecting with requests in flight does not crash the Server;
// its requests are dropped, late Computer answers are discarded, and the office hears only the
// ordinary notify:leave_office (no "originator gone" event).
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

void test("late answers to a vanished Agent are dropped and the Server keeps serving", async () => {
  const agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "pc-1");
  const seen = record(pc);
  const acks: ((a: unknown) => void)[] = [];
  const arrived = new Promise<void>((resolve) => {
    pc.on("client:get_blob", (_req: unknown, ack: (a: unknown) => void) => {
      acks.push(ack);
      if (acks.length === 5) resolve();
    });
  });
  for (let i = 0; i < 5; i += 1) {
    agent.emit(
      "client:get_blob",
      request("agent-1", "pc-1", { blob_handle: "h" }),
      () => undefined,
    );
  }
  await arrived;
  const left = waitFor(pc, "notify:leave_office");
  agent.disconnect();
  assert.deepEqual(await left, { office_id: "office-1", agent: "agent-1" });
  assert.equal(h.server.inflight(), 0);
  for (const ack of acks) ack({ blob: "late" }); // discarded without error

  // The Server still serves: a new Agent joins and routes.
  const next = await h.agent("office-1", "agent-2");
  pc.on("client:get_tools", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack({ tools: [], req_id: req.req_id }),
  );
  const [answer] = await emitAck(next, "client:get_tools", request("agent-2", "pc-1"));
  assert.deepEqual((answer as { tools: unknown[] }).tools, []);
  await barrier(pc);
  const notifies = seen.filter((e) => e.event.startsWith("notify:")).map((e) => e.event);
  assert.deepEqual(notifies, ["notify:leave_office", "notify:enter_office"]);
});
