// @both-transports
// Bytes the Server may come to hold for a client are bounded before a request is forwarded
// (server/outbound.ts): each forwarded request reserves the most its answer can take, and a
// request that would take its Agent over `maxQueuedBytes` (or the Server over
// `maxQueuedBytesTotal`) is answered the flat busy at once and never reaches a Computer. Answers
// give their reservation back. A small request still fits where a big one does not.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { ServerHarness, emitAck, request, type Socket } from "../support/server-harness.ts";

const MAX_BUFFER = 1_000_000;
const harnesses: ServerHarness[] = [];
after(() => Promise.all(harnesses.map((h) => h.close())));

/** A Computer that keeps every request's ack until `answerAll`. */
function holdingComputer(pc: Socket): { held: number; answerAll(): void } {
  const acks: ((a: unknown) => void)[] = [];
  for (const event of ["client:get_tools", "client:get_blob"]) {
    pc.on(event, (_req: unknown, ack: (a: unknown) => void) => acks.push(ack));
  }
  return {
    get held() {
      return acks.length;
    },
    answerAll: () => acks.splice(0).forEach((ack) => ack({ ok: true })),
  };
}

/** A flat busy that names the bound that refused, its size, and says so in its message. */
function assertBusy(answer: unknown, limit: string, max: number, message: RegExp): void {
  const a = answer as { code: number; message: string; details: unknown };
  assert.equal(a.code, 500);
  assert.deepEqual(a.details, { reason: "busy", limit, max });
  assert.match(a.message, message);
}

void test("per connection: the request that would pass the bound is busy, at once", async () => {
  const h = await ServerHarness.start({ maxQueuedBytes: 4 * 1024 * 1024 });
  harnesses.push(h);
  const agent = await h.agent("office-1", "agent-1");
  const pc = holdingComputer(await h.computer("office-1", "pc-1"));
  // Each get_tools answer may be as large as the Server's buffer: 4 fit in 4 MiB.
  const pending = Array.from({ length: 4 }, () =>
    emitAck(agent, "client:get_tools", request("agent-1", "pc-1")),
  );
  const [refused] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  assertBusy(refused, "queued_bytes_per_connection", 4 * 1024 * 1024, /connection \(limit 4 MiB/);
  assert.equal(h.server.outbound.reservedTotal, 4 * MAX_BUFFER);
  // A chunk of 64 KiB reserves its base64 size and an envelope: it still fits.
  const small = emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h", max_chunk_bytes: 65_536 }),
  );
  await until(() => pc.held === 5);
  pc.answerAll();
  await Promise.all([...pending, small]);
  assert.equal(h.server.outbound.reservedTotal, 0, "answers gave their reservations back");
  const again = emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  await until(() => pc.held === 1);
  pc.answerAll();
  assert.deepEqual((await again)[0], { ok: true });
  const text = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(text, /a2c_limit_refusals_total\{limit="queued_bytes_per_connection"\} 1\b/);
});

void test("across connections: the total bound refuses whoever would pass it", async () => {
  const h = await ServerHarness.start({ maxQueuedBytesTotal: 3 * MAX_BUFFER });
  harnesses.push(h);
  const a = await h.agent("office-1", "agent-a");
  const b = await h.agent("office-2", "agent-b");
  const pcA = holdingComputer(await h.computer("office-1", "pc"));
  const pcB = holdingComputer(await h.computer("office-2", "pc"));
  const held = [
    emitAck(a, "client:get_tools", request("agent-a", "pc")),
    emitAck(a, "client:get_tools", request("agent-a", "pc")),
    emitAck(b, "client:get_tools", request("agent-b", "pc")),
  ];
  await until(() => pcA.held + pcB.held === 3);
  const [refused] = await emitAck(b, "client:get_tools", request("agent-b", "pc"));
  assertBusy(refused, "queued_bytes_total", 3 * MAX_BUFFER, /all its clients \(limit 2\.9 MiB/);
  pcA.answerAll();
  pcB.answerAll();
  await Promise.all(held);
  assert.equal(h.server.outbound.reservedTotal, 0);
});

/** Waits for a condition the test itself makes true by socket round trips (no timing). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
