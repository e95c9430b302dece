// @both-transports
// The in-flight table is released on every answer path: a schema refusal (never entered), a
// request socket.io-parser cannot encode (an array nested 100,000 deep), an answer it cannot
// encode for the Agent, a Computer's error, a relay timeout, the Computer or the Agent
// disconnecting. After each: the table and /healthz say 0, nothing stays reserved for the
// answer, and no "relay timeout" is logged later for a request that was already answered.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NAMESPACE, blobNotAccessible } from "../../protocol/index.ts";
import { RawClient } from "../support/raw-client.ts";
import { rawLogger } from "../support/reliability-stack.ts";
import {
  ServerHarness,
  TEST_TRANSPORT,
  TEST_TOKEN,
  emitAck,
  request,
  type Socket,
} from "../support/server-harness.ts";

const RELAY_TIMEOUT_MS = 300;
const logs = rawLogger("server");
let h: ServerHarness;
let agent: Socket;
let raw: RawClient;

/** `[[[…]]]` nested `depth` levels, as JSON text (no encoder is asked to write it). */
const deepJson = (depth: number): string => "[".repeat(depth) + "]".repeat(depth);

before(async () => {
  h = await ServerHarness.start({ relayTimeoutMs: RELAY_TIMEOUT_MS, logger: logs.log });
  agent = await h.agent("office-1", "agent-1");
  const pc = await h.computer("office-1", "pc");
  pc.on("client:get_skill", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack({ name: "s", body: "b", req_id: req.req_id }),
  );
  pc.on("client:get_blob", (_req: unknown, ack: (a: unknown) => void) =>
    ack(blobNotAccessible("gone")),
  );
  await h.computer("office-1", "pc-silent"); // never answers
  raw = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
  assert.deepEqual(await raw.join("agent", "office-2", "raw-agent"), [true, null]);
  await h.computer("office-2", "pc");
});
after(async () => {
  raw.close();
  await h.close();
});

async function assertReleased(what: string): Promise<void> {
  assert.equal(h.server.inflight(), 0, `${what}: in-flight table`);
  assert.equal(h.server.outbound.reservedTotal, 0, `${what}: bytes reserved for answers`);
  const health = (await (await fetch(`${h.url}/healthz`)).json()) as { inflight: number };
  assert.equal(health.inflight, 0, `${what}: /healthz`);
}

void test("schema refusal", async () => {
  const [answer] = await emitAck(agent, "client:get_blob", { agent: "agent-1" });
  assert.equal((answer as { code: number }).code, 400);
  await assertReleased("schema");
});

void test("a request socket.io-parser cannot re-encode: 500 at once", async () => {
  const req = request("raw-agent", "pc", { name: "s" });
  // The raw client writes the frame text itself; the Server decodes it, but its encoder
  // overflows the stack on the way to the Computer.
  const body =
    JSON.stringify(["client:get_skill", req]).slice(0, -2) + `,"extra":${deepJson(100_000)}}]`;
  const [error] = await raw.requestText(body);
  assert.deepEqual(error, { code: 500, message: "The request could not be forwarded" });
  await assertReleased("encode failure");
});

void test("the Computer's error answer", async () => {
  const [answer] = await emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc", { blob_handle: "h" }),
  );
  assert.deepEqual(answer, blobNotAccessible("gone"));
  await assertReleased("computer error");
});

void test("relay timeout", async () => {
  const [answer] = await emitAck(agent, "client:get_skills", request("agent-1", "pc-silent"));
  assert.equal((answer as { code: number }).code, 408);
  await assertReleased("timeout");
});

void test("the Computer disconnects with the request in flight", async () => {
  const pc = await h.computer("office-1", "pc-drop");
  pc.on("client:get_tools", () => pc.disconnect());
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-drop"));
  assert.equal((answer as { details: { reason: string } }).details.reason, "disconnected");
  await assertReleased("computer gone");
});

void test("the Agent disconnects with the request in flight; the late answer is dropped", async () => {
  const leaver = await h.agent("office-3", "leaver");
  const pc = await h.computer("office-3", "pc");
  const held = new Promise<(a: unknown) => void>((resolve) =>
    pc.on("client:get_tools", (_req: unknown, ack: (a: unknown) => void) => resolve(ack)),
  );
  leaver.emit("client:get_tools", request("leaver", "pc"), () => undefined);
  const ack = await held;
  assert.equal(h.server.inflight(), 1);
  const serverSide = h.server.io.of(NAMESPACE).sockets.get(leaver.id ?? "");
  const gone = new Promise((resolve) => serverSide?.once("disconnect", resolve));
  leaver.disconnect();
  await gone;
  await assertReleased("agent gone");
  ack({ tools: [], req_id: "late" });
});

void test("an answer socket.io-parser cannot encode for the Agent: 500, released", async () => {
  // The standard parser (no raw acks) decodes the Computer's ack and must re-encode it.
  const transport = TEST_TRANSPORT === "stock" ? "stock" : { off: ["raw_acks" as const] };
  const h2 = await ServerHarness.start({ transport });
  try {
    const a = await h2.agent("office-1", "agent-1");
    const pc = await RawClient.connect(h2.url, h2.server.path, { token: TEST_TOKEN });
    assert.deepEqual(await pc.join("computer", "office-1", "pc"), [true, null]);
    pc.onEvent = (_event, _args, id) => pc.ackRaw(id!, `[${deepJson(100_000)}]`);
    const [answer] = await emitAck(a, "client:get_tools", request("agent-1", "pc"));
    assert.deepEqual(answer, { code: 500, message: "The Computer's answer could not be relayed" });
    assert.equal(h2.server.inflight(), 0);
    assert.equal(h2.server.outbound.reservedTotal, 0);
    pc.close();
  } finally {
    await h2.close();
  }
});

void test("no relay timeout was logged for a request that had been answered", () => {
  // Every test above waited longer than the relay timeout in all; only the real one is logged.
  const timeouts = logs
    .text()
    .split("\n")
    .filter((l) => l.includes('"relay timeout"'));
  assert.equal(timeouts.length, 1, timeouts.join("\n"));
  assert.match(timeouts[0]!, /"computer":"pc-silent"/);
});
