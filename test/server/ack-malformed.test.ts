// @both-transports
// A Computer that acks with text that is not a JSON array (hostile or broken): the Server does not
// crash and forwards nothing an Agent could not decode; as with socket.io's own parser that
// Computer's connection is closed, so the Agent's request is answered 404 `disconnected` (D11) at
// once, and the Server goes on serving.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket } from "socket.io-client";
import { computerNotFound } from "../../protocol/index.ts";
import {
  ServerHarness,
  answerNextRaw,
  emitAck,
  request,
  waitFor,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;

before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
});
after(() => h.close());

// Long ones too: their long strings are checked without being copied (raw-text.ts).
const long = "QUJD".repeat(8 * 1024);
const malformed = [
  '[{"blob":"QUJD',
  '[{"blob":"QU\u0001JD"}]',
  "[1]]",
  '[{"a":}]',
  `[{"blob":"${long}`,
  `[{"blob":"${long}\u0001"}]`,
  `[{"blob":"${long}"}]]`,
  `[{"a":},"${long}"]`,
];
for (const [i, json] of malformed.entries()) {
  void test(`ack data ${JSON.stringify(json.slice(0, 14))} (${json.length} chars): 404 disconnected, Server up`, async () => {
    const pc = await h.computer("office-1", `pc-${i}`, { transports: ["websocket"] });
    answerNextRaw(pc, json);
    const gone = waitFor(pc, "disconnect");
    const answer = await emitAck(
      agent,
      "client:get_blob",
      request("agent-1", `pc-${i}`, { blob_handle: "h" }),
    );
    assert.deepEqual(answer, [computerNotFound(`pc-${i}`, "disconnected")]);
    await gone;
    assert.ok(agent.connected);
    const health = await fetch(`${h.url}/healthz`);
    assert.equal(health.status, 200);
  });
}
