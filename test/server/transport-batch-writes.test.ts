// server/transport/session-writes.ts (batched writes): a binary ack (two engine.io packets: the ack's text part and its
// attachment) reaches the Agent's TCP socket in ONE write carrying both WebSocket frames, not one
// write per frame, and the bytes arrive unchanged. Counted on the Server's own net.Socket of the
// Agent's session (the write calls node's stream machinery makes), so without the cork this
// test sees two writes. A binary part over BATCHED_ATTACHMENT_MOST (the SDK's default 512 KiB
// chunk) goes out as stock socket.io writes it: a write per frame.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import {
  emitAck,
  request,
  skipUnlessFastPaths,
  wholeChunkAck,
  webSocketPairSuite,
} from "../support/server-harness.ts";
import { countTcpWrites, type WriteCount } from "../support/tcp-writes.ts";
import { BATCHED_ATTACHMENT_MOST } from "../../server/transport/session-writes.ts";

const pair = webSocketPairSuite();

/** Counts the write calls on the Server's TCP socket of the Agent's engine.io session. */
function countWrites(): WriteCount {
  const session = pair.server.sessionOf<{
    transport: { name: string; socket: { _socket: unknown } };
  }>(pair.agent);
  assert.equal(session.transport.name, "websocket");
  return countTcpWrites(session.transport.socket._socket);
}

const skip = skipUnlessFastPaths("batched writes");

/** The Agent's write count on the Server's side for one binary ack of `bytes`. */
async function writesForAck(bytes: Buffer, reqId: string): Promise<WriteCount> {
  pair.pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) =>
    ack(wholeChunkAck(bytes, reqId, { blob_format: "binary" })),
  );
  const seen = countWrites();
  const [answer] = await emitAck(
    pair.agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h", blob_format: "binary" }),
  );
  const blob = (answer as { blob: unknown }).blob;
  assert.ok(Buffer.isBuffer(blob) && blob.equals(bytes));
  return seen;
}

void test("both frames of a binary ack leave the Server in one write", { skip }, async () => {
  const seen = await writesForAck(randomBytes(BATCHED_ATTACHMENT_MOST), "r1");
  assert.equal(seen.writes, 1, `${seen.writes} writes for one binary ack`);
  // The text frame (header and payload merged by ws) plus the binary frame's header and payload.
  assert.ok(seen.buffers >= 2, `${seen.buffers} buffers`);
});

void test("a binary ack over the batching bound leaves as stock socket.io writes it", async () => {
  const seen = await writesForAck(randomBytes(512 * 1024), "r-large");
  assert.ok(seen.writes >= 2, `${seen.writes} writes: the text frame waits for the attachment`);
});
