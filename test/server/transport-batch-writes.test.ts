// server/transport/session-writes.ts (batched writes): a binary ack (two engine.io packets: the ack's text part and its
// attachment) reaches the Agent's TCP socket in ONE write carrying both WebSocket frames, not one
// write per frame, and the bytes arrive unchanged. Counted on the Server's own net.Socket of the
// Agent's session (the write calls node's stream machinery makes), so without the cork this
// test sees two writes.
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

void test("both frames of a binary ack leave the Server in one write", { skip }, async () => {
  const bytes = randomBytes(64 * 1024);
  pair.pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) =>
    ack(wholeChunkAck(bytes, "r1", { blob_format: "binary" })),
  );
  const seen = countWrites();
  const [answer] = await emitAck(
    pair.agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h", blob_format: "binary" }),
  );
  const blob = (answer as { blob: unknown }).blob;
  assert.ok(Buffer.isBuffer(blob) && blob.equals(bytes));
  assert.equal(seen.writes, 1, `${seen.writes} writes for one binary ack`);
  // The text frame (header and payload merged by ws) plus the binary frame's header and payload.
  assert.ok(seen.buffers >= 2, `${seen.buffers} buffers`);
});
