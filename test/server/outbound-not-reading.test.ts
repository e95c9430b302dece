// A client that stopped reading gets `busy` for new requests once its queued bytes have stood
// still for `outboundAdmitStallMs` (server/outbound.ts), long before its queue reaches
// `maxQueuedBytes`: every answer admitted for it would only wait until the stall drop. Once it
// reads again, its requests are admitted and answered.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ServerHarness,
  clientTcp,
  emitAck,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

const CHUNK = 256 * 1024;
const MAX_QUEUED = 64 * 1024 * 1024;

let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start({ maxQueuedBytes: MAX_QUEUED, outboundAdmitStallMs: 100 });
  let pc: Socket;
  ({ agent, pc } = await h.webSocketPair());
  const blob = randomBytes(CHUNK).toString("base64");
  pc.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) => {
    ack(wholeChunkAck(blob, req.req_id));
  });
});
after(() => h.close());

async function metric(name: string, label = ""): Promise<number> {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*${label}[^}]*\\})? (\\S+)$`, "m").exec(text);
  return Number(m?.[1] ?? 0);
}

const refusals = (): Promise<number> =>
  metric("a2c_limit_refusals_total", 'limit="queued_bytes_per_connection"');

void test("a client that stopped reading is refused long before its byte bound", async () => {
  const tcp = clientTcp(agent);
  tcp.pause();
  const answers: Promise<unknown[]>[] = [];
  let largestQueue = 0;
  // The flood: a request every few ms, as a client that never reads would send them, until the
  // Server refuses one (its refusal counter; the refusal itself waits in the unread socket).
  for (let i = 0; i < 2_000 && (await refusals()) === 0; i++) {
    answers.push(
      emitAck(
        agent,
        "client:get_blob",
        request("agent-1", "pc-1", { blob_handle: "h", max_chunk_bytes: CHUNK }),
      ),
    );
    await sleep(5); // the flood's pace: the stall is measured in the Server's time
    largestQueue = Math.max(largestQueue, await metric("a2c_outbound_largest_queue_bytes"));
  }
  assert.ok((await refusals()) > 0, "the Server refused the client that does not read");
  assert.ok(
    largestQueue < MAX_QUEUED / 4,
    `refused at ${largestQueue} queued bytes, not near the ${MAX_QUEUED} bound`,
  );

  tcp.resume();
  const settled = (await Promise.all(answers)).map(([a]) => a as Record<string, unknown>);
  const busy = settled.filter((a) => (a.details as { reason?: string } | undefined)?.reason);
  assert.ok(busy.length > 0);
  for (const a of busy)
    assert.deepEqual(a.details, { reason: "busy", limit: "queued_bytes_per_connection" });
  assert.ok(settled.length - busy.length > 0, "what was admitted is delivered once it reads");

  // Reading again, it is admitted and answered.
  const [again] = (await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h", max_chunk_bytes: CHUNK }),
  )) as [Record<string, unknown>];
  assert.equal(typeof again.blob, "string");
});
