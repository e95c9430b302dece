// @both-transports
// D13 + D19: acks are relayed byte-identical — a 900 KB binary attachment and a base64 string
// whose ack is just under maxHttpBufferSize. An ack over the limit drops the Computer (socket.io
// rule) and the Agent's request is answered 404 `disconnected` at once (D11).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import {
  DEFAULT_MAX_HTTP_BUFFER_SIZE,
  computerNotFound,
  encodedAckBytes,
  maxChunkBytes,
} from "../../protocol/index.ts";
import {
  ServerHarness,
  emitAck,
  httpGet,
  request,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
let pc: Socket;
const envelope = {
  blob_handle: "handle-0123456789",
  mime_type: "application/octet-stream",
  total_size: 5_000_000,
  sha256: "0".repeat(64),
  chunk_offset: 0,
  req_id: "req-fixed-length-000",
};
before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  // A Computer acks as a client: binary attachments travel raw only over WebSocket.
  pc = await h.computer("office-1", "pc-1", { transports: ["websocket"] });
});
after(() => h.close());

void test("a 900 KB binary attachment reaches the Agent byte-identical", async () => {
  const bytes = randomBytes(900_000);
  pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) =>
    ack({ ...envelope, eof: false, blob: bytes, blob_format: "binary" }),
  );
  const [answer] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: envelope.blob_handle, blob_format: "binary" }),
  );
  const blob = (answer as { blob: unknown }).blob;
  assert.ok(Buffer.isBuffer(blob));
  assert.ok(blob.equals(bytes));
  assert.deepEqual(
    { ...(answer as object), blob: null },
    { ...envelope, eof: false, blob: null, blob_format: "binary" },
  );
  const metrics = await httpGet(`${h.url}/metrics`);
  const line = metrics.text
    .split("\n")
    .find((l) => l.startsWith('a2c_relay_resource_bytes_total{event="client:get_blob"'));
  assert.equal(
    line,
    'a2c_relay_resource_bytes_total{event="client:get_blob",carriage="binary"} 900000',
  );
});

void test("a base64 ack just under maxHttpBufferSize is relayed byte-identical", async () => {
  const n = maxChunkBytes({
    maxHttpBufferSize: DEFAULT_MAX_HTTP_BUFFER_SIZE,
    envelope,
    carriage: "base64",
  });
  const payload = { ...envelope, eof: false, blob: randomBytes(n).toString("base64") };
  assert.ok(encodedAckBytes(payload) <= DEFAULT_MAX_HTTP_BUFFER_SIZE);
  assert.ok(encodedAckBytes(payload) > DEFAULT_MAX_HTTP_BUFFER_SIZE - 100);
  pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) => ack(payload));
  const [answer] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: envelope.blob_handle }),
  );
  assert.deepEqual(answer, payload);
});

void test("an ack over the limit drops the Computer and the Agent hears 404 disconnected", async () => {
  const blob = "A".repeat(DEFAULT_MAX_HTTP_BUFFER_SIZE + 10);
  pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) =>
    ack({ ...envelope, eof: false, blob }),
  );
  const [answer] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: envelope.blob_handle }),
  );
  assert.deepEqual(answer, computerNotFound("pc-1", "disconnected"));
});
