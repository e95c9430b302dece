// @both-transports
// D11: a Computer that disconnects with 50 requests in flight → all 50 are answered at once with
// 404 {details: {computer_name, reason: "disconnected"}} — within 1 s, not at the relay timeout
// (socket.io itself never fails server-side pending acks on disconnect). The 50 chunk requests
// name no size, so each reserves a whole answer: the unread bound (server/outbound.ts) is off
// here, this test is about what a disconnect answers.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { computerNotFound } from "../../protocol/index.ts";
import { ServerHarness, emitAck, request, type Socket } from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start({ relayTimeoutMs: 60_000, maxUnreadBytes: 0 });
  agent = await h.agent("office-1", "agent-1");
});
after(() => h.close());

void test("50 in-flight requests fail with 404 disconnected within 1 s of the drop", async () => {
  const pc = await h.computer("office-1", "pc-1");
  let received = 0;
  const allReceived = new Promise<void>((resolve) => {
    pc.on("client:get_blob", () => {
      received += 1;
      if (received === 50) resolve();
    });
  });
  const answers = Array.from({ length: 50 }, (_, i) =>
    emitAck(
      agent,
      "client:get_blob",
      request("agent-1", "pc-1", { blob_handle: "h", chunk_offset: i }),
    ),
  );
  await allReceived;
  assert.equal(h.server.inflight(), 50);
  const dropped = Date.now();
  pc.disconnect();
  const results = await Promise.all(answers);
  const elapsed = Date.now() - dropped;
  assert.ok(elapsed < 1000, `answered after ${elapsed} ms`);
  for (const [answer] of results) {
    assert.deepEqual(answer, computerNotFound("pc-1", "disconnected"));
  }
  assert.equal(h.server.inflight(), 0);
});

void test("after the drop the name is simply unknown", async () => {
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  assert.deepEqual(answer, computerNotFound("pc-1"));
});
