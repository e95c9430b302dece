// Limits: requests in flight per Agent socket are capped; beyond the cap the answer is an
// immediate flat error (busy), never a queue; answered requests free their slots.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { busy } from "../../protocol/index.ts";
import { ServerHarness, emitAck, request } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start({ maxInflightPerAgent: 4 });
});
after(() => h.close());

void test("the fifth concurrent request is refused at once, later ones pass again", async () => {
  const agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "pc-1");
  const held: ((a: unknown) => void)[] = [];
  let waiting: { count: number; resolve: () => void } | null = null;
  const heldCount = (count: number): Promise<void> =>
    new Promise((resolve) => {
      if (held.length >= count) return resolve();
      waiting = { count, resolve };
    });
  pc.on("client:get_blob", (_req: unknown, ack: (a: unknown) => void) => {
    held.push(ack);
    if (waiting && held.length >= waiting.count) waiting.resolve();
  });
  const four = heldCount(4);
  const first = Array.from({ length: 4 }, () =>
    emitAck(agent, "client:get_blob", request("agent-1", "pc-1", { blob_handle: "h" })),
  );
  await four;
  const [refused] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h" }),
  );
  assert.deepEqual(refused, {
    ...busy("Too many requests in flight from this client (limit 4)"),
    details: { reason: "busy", limit: "requests_in_flight", max: 4 },
  });
  assert.equal(held.length, 4, "the refused request never reached the Computer");

  // Another Agent's budget is its own.
  const other = await h.agent("office-2", "agent-2");
  const [elsewhere] = await emitAck(other, "client:get_tools", request("agent-2", "nobody"));
  assert.equal((elsewhere as { code: number }).code, 404);

  for (const ack of held) ack({ ok: true });
  await Promise.all(first);
  const again = emitAck(agent, "client:get_blob", request("agent-1", "pc-1", { blob_handle: "h" }));
  await heldCount(5);
  held[4]!({ ok: "again" });
  assert.deepEqual((await again)[0], { ok: "again" });
});
