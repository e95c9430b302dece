// @both-transports
// A raw client that stops reading its TCP socket and keeps asking for big chunks (server/
// outbound.ts): the Server stops forwarding its requests once the answers it already holds or
// expects for it reach `maxQueuedBytes` (busy, never relayed), drops the connection once its
// queue has not moved for `outboundStallMs` (logged, counted as outbound_stalled), and frees
// what it held: after a full GC the process's Buffers are back to their level before the attack.
// An Agent of another office is served throughout.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { NAMESPACE } from "../../protocol/index.ts";
import { RawClient } from "../support/raw-client.ts";
import { memoryAfterGc } from "../support/reliability-stack.ts";
import {
  ServerHarness,
  TEST_TOKEN,
  emitAck,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

const MAX_QUEUED = 8 * 1024 * 1024;
const MAX_BUFFER = 1_000_000;
/** The largest base64 chunk that fits the Server's buffer, as a Computer would clamp it. */
const CHUNK = randomBytes(700_000).toString("base64");

let h: ServerHarness;
let victim: Socket;
let attacker: RawClient;
let forwarded = 0;
/** Queued + reserved bytes, sampled each time a request reaches the attacker's Computer. */
let most = 0;

before(async () => {
  h = await ServerHarness.start({ maxQueuedBytes: MAX_QUEUED, outboundStallMs: 500 });
  const pcA = await h.computer("office-a", "pc");
  pcA.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) => {
    forwarded += 1;
    const { queuedTotal, reservedTotal } = h.server.outbound;
    most = Math.max(most, queuedTotal + reservedTotal);
    ack(wholeChunkAck(CHUNK, req.req_id));
  });
  const pcB = await h.computer("office-b", "pc");
  pcB.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack(wholeChunkAck(randomBytes(1024), req.req_id)),
  );
  victim = await h.agent("office-b", "victim");
  attacker = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
  assert.deepEqual(await attacker.join("agent", "office-a", "attacker"), [true, null]);
});
after(async () => {
  // A `before` that failed (a connect refused on a loaded machine) must not leave the Server up.
  attacker?.close();
  await h?.close();
});

void test("a non-reading flooder is bounded, refused, dropped; the other office is served", async () => {
  const [serverSide] = [...h.server.io.of(NAMESPACE).sockets.values()].filter(
    (s) => s.data.member?.name === "attacker",
  );
  const gone = new Promise((resolve) => serverSide!.once("disconnect", resolve));
  const buffersBefore = memoryAfterGc().arrayBuffers;
  attacker.stopReading();
  let sent = 0;
  const flood = setInterval(() => {
    for (let i = 0; i < 10; i++) {
      attacker.emit(
        "client:get_blob",
        request("attacker", "pc", { blob_handle: "h", max_chunk_bytes: 1e9 }),
      );
      sent += 1;
    }
  }, 5);
  let served = 0;
  let dropped = false;
  void gone.then(() => (dropped = true));
  try {
    // The other office's Agent keeps pulling while the attack runs and until it is dropped.
    while (!dropped) {
      const [answer] = await emitAck(
        victim,
        "client:get_blob",
        request("victim", "pc", { blob_handle: "h" }),
      );
      assert.equal((answer as { eof?: boolean }).eof, true);
      served += 1;
    }
  } finally {
    clearInterval(flood);
  }
  assert.ok(served > 0);
  assert.ok(sent > forwarded, `${sent} requests, ${forwarded} forwarded`);
  // What the Server held never passed the bound by more than one answer.
  assert.ok(most <= MAX_QUEUED + MAX_BUFFER, `held up to ${most} bytes`);
  assert.equal(h.server.outbound.queuedTotal, 0, "the dropped client's backlog is freed");
  assert.equal(h.server.outbound.reservedTotal, 0);
  assert.equal(h.server.inflight(), 0);
  const buffersAfter = memoryAfterGc().arrayBuffers;
  assert.ok(
    buffersAfter - buffersBefore <= 4 * 1024 * 1024,
    `Buffers ${buffersBefore} → ${buffersAfter}: something of the dropped client is still referenced`,
  );
  const text = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(text, /a2c_disconnects_total\{reason="outbound_stalled"\} 1\b/);
  assert.match(text, /a2c_limit_refusals_total\{limit="queued_bytes_per_connection"\} [1-9]/);
});
