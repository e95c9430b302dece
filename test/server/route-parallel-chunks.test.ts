// @both-transports
// protocol.md §4.2: parallel client:get_blob requests with different offsets are each routed and
// acked independently — answered in reverse order by the Computer, each reaches its own caller.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, emitAck, request, type Socket } from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
let pc: Socket;
before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await h.computer("office-1", "pc-1");
});
after(() => h.close());

void test("16 chunk requests answered out of order each get their own answer", async () => {
  const N = 16;
  const pending: { req: { chunk_offset: number; req_id: string }; ack: (a: unknown) => void }[] =
    [];
  const allArrived = new Promise<void>((resolve) => {
    pc.on(
      "client:get_blob",
      (req: { chunk_offset: number; req_id: string }, ack: (a: unknown) => void) => {
        pending.push({ req, ack });
        if (pending.length === N) resolve();
      },
    );
  });
  const answers = Array.from({ length: N }, (_, i) =>
    emitAck(
      agent,
      "client:get_blob",
      request("agent-1", "pc-1", {
        blob_handle: "h",
        chunk_offset: i * 1024,
        max_chunk_bytes: 1024,
      }),
    ),
  );
  await allArrived;
  // Every request reached the Computer separately, with its own offset.
  assert.deepEqual(
    pending.map((p) => p.req.chunk_offset).sort((a, b) => a - b),
    Array.from({ length: N }, (_, i) => i * 1024),
  );
  for (const { req, ack } of [...pending].reverse()) {
    ack({ chunk_offset: req.chunk_offset, req_id: req.req_id, blob: String(req.chunk_offset) });
  }
  const results = await Promise.all(answers);
  results.forEach(([answer], i) => {
    assert.equal((answer as { chunk_offset: number }).chunk_offset, i * 1024);
    assert.equal((answer as { blob: string }).blob, String(i * 1024));
  });
});
