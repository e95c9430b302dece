// @both-transports
// protocol.md §4.2, D13: a same-office client:get_blob reaches the Computer with an identical
// payload (the original object, unknown fields included) and the Computer's ack — success or a
// flat ErrorPayload — reaches the Agent unchanged.
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

void test("the Computer receives the get_blob payload unchanged, unknown fields included", async () => {
  const sent = request("agent-1", "pc-1", {
    blob_handle: "opaque-handle",
    chunk_offset: 65536,
    max_chunk_bytes: 4096,
    x_future_field: { nested: [1, "two", null] },
  });
  const received = new Promise<unknown>((resolve) => {
    pc.once("client:get_blob", (req: unknown, ack: (a: unknown) => void) => {
      ack({ code: 4018, message: "Blob not accessible", details: { reason: "gone" } });
      resolve(req);
    });
  });
  await emitAck(agent, "client:get_blob", sent);
  assert.deepEqual(await received, sent);
});

void test("a success ack reaches the Agent deep-equal", async () => {
  const answer = {
    blob_handle: "h",
    mime_type: "application/octet-stream",
    total_size: 3,
    sha256: "a".repeat(64),
    chunk_offset: 0,
    eof: true,
    blob: "AQID",
    req_id: "r",
    extension_field: { kept: true },
  };
  pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) => ack(answer));
  const args = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h" }),
  );
  assert.deepEqual(args, [answer]);
});

void test("a flat ErrorPayload ack reaches the Agent deep-equal", async () => {
  const error = { code: 4018, message: "Blob not accessible", details: { reason: "range" } };
  pc.once("client:get_blob", (_req: unknown, ack: (a: unknown) => void) => ack(error));
  const args = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h" }),
  );
  assert.deepEqual(args, [error]);
});

void test("every client:* event is routed the same way", async () => {
  const extras: Record<string, Record<string, unknown>> = {
    "client:get_tools": {},
    "client:get_skills": {},
    "client:get_skill": { name: "demo", rel_path: "SKILL.md" },
    "client:tool_call": { tool_name: "t__echo", params: { x: 1 }, timeout: 5 },
  };
  for (const [event, extra] of Object.entries(extras)) {
    const sent = request("agent-1", "pc-1", extra);
    pc.once(event, (req: unknown, ack: (a: unknown) => void) => ack({ echoed: req }));
    const [answer] = await emitAck(agent, event, sent);
    assert.deepEqual(answer, { echoed: sent }, event);
  }
});
