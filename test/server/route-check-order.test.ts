// D7 → D8 → D9 order: schema first (400 even from a non-member), then office (4103), then role
// (403 even for a missing name), then the name (404).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { badRequest, computerNotFound, forbidden, notInOffice } from "../../protocol/index.ts";
import { ServerHarness, emitAck, request } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("each check wins over the ones after it", async () => {
  const loner = await h.connect();
  const pc = await h.computer("office-1", "pc-1");
  const agent = await h.agent("office-1", "agent-1");
  const bad = { agent: "agent-1", req_id: "r" }; // no computer
  assert.deepEqual((await emitAck(loner, "client:get_tools", bad))[0], badRequest());
  assert.deepEqual(
    (await emitAck(loner, "client:get_tools", request("agent-1", "missing")))[0],
    notInOffice(),
  );
  assert.deepEqual(
    (await emitAck(pc, "client:get_tools", request("agent-1", "missing")))[0],
    forbidden(),
  );
  assert.deepEqual(
    (await emitAck(agent, "client:get_tools", request("agent-1", "missing")))[0],
    computerNotFound("missing"),
  );
});
