// D13 byte for byte: with raw acks (server/transport/raw-text.ts), the Agent receives the very
// text of the Computer's ack — even text that a JSON.parse + JSON.stringify round trip would
// rewrite (`2.50`, `\u00e9`, spaces) — only the packet header (the ack id) differs.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  answerNextRaw,
  emitAck,
  incomingAckTexts,
  request,
  skipUnlessFastPaths,
  webSocketPairSuite,
} from "../support/server-harness.ts";

const pair = webSocketPairSuite();

const skip = skipUnlessFastPaths("raw acks");

void test("the Agent receives the Computer's ack text unchanged", { skip }, async () => {
  const json =
    '[{"blob_handle":"h","total_size":3, "chunk_offset":0,"eof":true,"score":2.50,' +
    `"name":"caf\\u00e9","blob":"${"QUJD".repeat(30_000)}","req_id":"r"},null]`;
  const acks = incomingAckTexts(pair.agent);
  answerNextRaw(pair.pc, json);
  const args = await emitAck(
    pair.agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h" }),
  );
  assert.deepEqual(args, JSON.parse(json));
  assert.equal(acks.length, 1);
  assert.equal(acks[0]!.replace(/^3\/smcp,\d+/, ""), json);

  const metrics = await fetch(`${pair.server.url}/metrics`).then((r) => r.text());
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith('a2c_relay_resource_bytes_total{event="client:get_blob"'));
  // Decoded bytes, counted from the base64 text's length: 4 characters are 3 bytes.
  assert.equal(
    line,
    `a2c_relay_resource_bytes_total{event="client:get_blob",carriage="base64"} ${3 * 30_000}`,
  );
});
