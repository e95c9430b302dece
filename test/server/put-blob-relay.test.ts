/**
 * The relay of `client:put_blob` (docs/protocol.md, "client:put_blob"; D7–D13): routed like every
 * `client:*` (flat errors, in-flight release on disconnect, the Computer's 4019 passed through
 * unchanged, the payload forwarded unchanged, binary attachments included), and bounded: chunks
 * an Agent sends faster than a Computer answers them are refused `busy`
 * (`upload_bytes_in_flight`) beyond `maxUnreadBytes` per Computer, never held without bound.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { blobWriteFailed, computerNotFound, notInOffice } from "../../protocol/index.ts";
import { emitAck, request, ServerHarness, type Socket } from "../support/server-harness.ts";

const MiB = 1024 * 1024;
let h: ServerHarness;
let agent: Socket;
let pc: Socket;
/** Requests the fake Computer got, with their acks (answered by each test). */
const held: Array<{ req: Record<string, unknown>; ack: (a: unknown) => void }> = [];

before(async () => {
  h = await ServerHarness.start({ maxUnreadBytes: 2 * MiB });
  agent = await h.agent("office-1", "agent-1", { transports: ["websocket"] });
  pc = await h.computer("office-1", "pc-1", { transports: ["websocket"] });
  pc.on("client:put_blob", (req: Record<string, unknown>, ack: (a: unknown) => void) => {
    held.push({ req, ack });
  });
});
after(() => h.close());

/** A later chunk of `size` raw bytes (base64 on the wire unless `binary`). */
function chunk(size: number, binary = false): Record<string, unknown> {
  const bytes = randomBytes(size);
  return request("agent-1", "pc-1", {
    upload_id: "0".repeat(32),
    chunk_offset: 0,
    eof: false,
    blob: binary ? bytes : bytes.toString("base64"),
  });
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

void test("forwarded unchanged, binary attachment included; the Computer's 4019 relayed as sent", async () => {
  const req = chunk(1000, true);
  const answer = blobWriteFailed("range", "chunk_offset does not match received bytes", {
    upload_id: "0".repeat(32),
  });
  const pending = emitAck(agent, "client:put_blob", req);
  await until(() => held.length === 1);
  const got = held.shift()!;
  assert.ok(Buffer.isBuffer(got.req.blob));
  assert.deepEqual(got.req.blob, req.blob);
  assert.deepEqual({ ...got.req, blob: null }, { ...req, blob: null });
  got.ack(answer);
  assert.deepEqual(await pending, [answer]);
});

void test("flat refusals: unknown Computer 404, sender not in an office 4103", async () => {
  const [unknown] = await emitAck(agent, "client:put_blob", {
    ...chunk(10),
    computer: "nobody",
  });
  assert.deepEqual(unknown, computerNotFound("nobody"));
  const loner = await h.connect();
  const [notJoined] = await emitAck(loner, "client:put_blob", chunk(10));
  assert.deepEqual(notJoined, notInOffice());
});

void test("an Agent sending faster than the Computer answers: busy beyond 2 MiB in flight, then admitted again", async () => {
  // 480 KiB raw is 640 KiB of base64: three fit under 2 MiB, the fourth does not.
  const sent = [0, 1, 2].map(() => emitAck(agent, "client:put_blob", chunk(480 * 1024)));
  await until(() => held.length === 3);
  const [refused] = await emitAck(agent, "client:put_blob", chunk(480 * 1024));
  const r = refused as { code: number; details: Record<string, unknown> };
  assert.equal(r.code, 500);
  assert.equal(r.details.reason, "busy");
  assert.equal(r.details.limit, "upload_bytes_in_flight");
  assert.equal(r.details.max, 2 * MiB);
  assert.equal(held.length, 3, "the refused chunk never reached the Computer");
  // Answers give the room back.
  for (const { req, ack } of held.splice(0)) {
    ack({ chunk_offset: 0, req_id: req.req_id, upload_id: "0".repeat(32) });
  }
  await Promise.all(sent);
  const next = emitAck(agent, "client:put_blob", chunk(480 * 1024));
  await until(() => held.length === 1);
  const { req, ack } = held.shift()!;
  ack({ chunk_offset: 0, req_id: req.req_id, upload_id: "0".repeat(32) });
  assert.equal(((await next)[0] as { req_id: string }).req_id, req.req_id);
});

void test("the Computer drops with chunks in flight: each answered 404 disconnected, room released", async () => {
  const sent = [0, 1].map(() => emitAck(agent, "client:put_blob", chunk(480 * 1024)));
  await until(() => held.length === 2);
  pc.disconnect();
  for (const [answer] of await Promise.all(sent)) {
    assert.deepEqual(answer, computerNotFound("pc-1", "disconnected"));
  }
  held.length = 0;
  assert.equal(h.server.outbound.reservedTotal, 0);
});
