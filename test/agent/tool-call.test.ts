import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { ComputerNotFoundError, IntegrityError, SidebandRestoreError } from "../../agent/errors.ts";
import {
  COMPUTER,
  NO_ANSWER,
  answerFor,
  connectAgent,
  serve,
  sha256,
  startFakeServer,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

// Loose view of a content item for assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions reach into loose MCP items
type Item = Record<string, any>;

let fake: FakeServer;
let agent: AgentClient;

before(async () => {
  fake = await startFakeServer();
  agent = await connectAgent(fake, { toolTimeoutMarginMs: 50 });
  fake.on("client:get_blob", (req) => answerFor(blobs[req.blob_handle as string]!, req));
});
after(async () => {
  await agent.close();
  await fake.close();
});

const png = testBytes(200_000, 1);
const wav = testBytes(70_000, 2);
const pdf = testBytes(90_000, 3);
const blobs: Record<string, Buffer> = { "h-png": png, "h-wav": wav, "h-pdf": pdf };

function sidebanded(extraMeta: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    content: [
      { type: "text", text: "here you go" },
      {
        type: "image",
        data: "",
        mimeType: "image/png",
        _meta: {
          a2c_blob_handle: "h-png",
          a2c_total_size: png.length,
          a2c_sha256: sha256(png),
          ...extraMeta,
        },
      },
      {
        type: "audio",
        data: "",
        mimeType: "audio/wav",
        _meta: { a2c_blob_handle: "h-wav", a2c_total_size: wav.length, a2c_sha256: sha256(wav) },
      },
      {
        type: "resource",
        resource: { uri: "file:///r.pdf", mimeType: "application/pdf", blob: "" },
        _meta: {
          a2c_blob_handle: "h-pdf",
          a2c_total_size: pdf.length,
          a2c_sha256: sha256(pdf),
          keep: 1,
        },
      },
      { type: "image", data: Buffer.from("tiny").toString("base64"), mimeType: "image/png" },
    ],
    isError: false,
  };
}

void test("callTool restores every sidebanded item and strips the a2c_* keys", async () => {
  fake.on("client:tool_call", () => sidebanded());
  const res = await agent.callTool(COMPUTER, "demo__shot", { a: 1 }, { timeout: 5 });
  const c = res.content as Item[];
  assert.equal(c[0]!.text, "here you go");
  assert.deepEqual(Buffer.from(c[1]!.data, "base64"), png);
  assert.equal("_meta" in c[1]!, false, "empty _meta removed");
  assert.deepEqual(Buffer.from(c[2]!.data, "base64"), wav);
  assert.deepEqual(Buffer.from(c[3]!.resource.blob, "base64"), pdf);
  assert.deepEqual(c[3]!._meta, { keep: 1 }, "non-a2c keys kept");
  assert.equal(c[4]!.data, Buffer.from("tiny").toString("base64"));
  const call = fake.received.find((r) => r.event === "client:tool_call")!.payload;
  assert.equal(call.tool_name, "demo__shot");
  assert.equal(call.timeout, 5);
  assert.deepEqual(call.params, { a: 1 });
});

void test("restore: false returns the handles untouched", async () => {
  fake.on("client:tool_call", () => sidebanded());
  const res = await agent.callTool(COMPUTER, "t", {}, { restore: false });
  assert.equal((res.content[1] as Item)._meta.a2c_blob_handle, "h-png");
});

void test("sidebanded bytes that do not match a2c_sha256: typed error, never an empty item", async () => {
  fake.on("client:tool_call", () => sidebanded({ a2c_sha256: sha256(Buffer.from("other")) }));
  await assert.rejects(agent.callTool(COMPUTER, "t"), (err: unknown) => {
    assert.ok(err instanceof SidebandRestoreError);
    assert.equal(err.itemIndex, 1);
    assert.ok(err.cause instanceof IntegrityError);
    return true;
  });
});

void test("sidebanded item with a wrong a2c_total_size: typed error", async () => {
  fake.on("client:tool_call", () => sidebanded({ a2c_total_size: png.length + 1 }));
  await assert.rejects(agent.callTool(COMPUTER, "t"), SidebandRestoreError);
});

void test("sidebanded item without a2c_sha256: typed error", async () => {
  fake.on("client:tool_call", () => sidebanded({ a2c_sha256: undefined }));
  await assert.rejects(agent.callTool(COMPUTER, "t"), SidebandRestoreError);
});

void test("result-level _meta is accepted when meta is absent", async () => {
  fake.on("client:tool_call", () => ({
    content: [{ type: "text", text: "x" }],
    isError: true,
    _meta: { a2c_cancelled: true },
  }));
  const res = await agent.callTool(COMPUTER, "t");
  assert.equal(res.meta?.a2c_cancelled, true);
});

void test("a flat ErrorPayload answer is thrown typed", async () => {
  fake.on("client:tool_call", () => ({
    code: 404,
    message: "Computer with name 'pc' not found",
    details: { computer_name: "pc" },
  }));
  await assert.rejects(agent.callTool(COMPUTER, "t"), ComputerNotFoundError);
});

void test("local timeout: cancel emitted with the call's req_id, spec's timeout result", async () => {
  fake.on("client:tool_call", () => NO_ANSWER);
  let reqId = "";
  const res = await agent.callTool(
    COMPUTER,
    "slow",
    {},
    {
      timeout: 1,
      onRequestId: (id) => (reqId = id),
    },
  );
  assert.deepEqual(res, {
    content: [{ type: "text", text: "Tool call timeout" }],
    isError: true,
    meta: { a2c_timeout: true },
  });
  const cancel = await waitFor(() =>
    fake.received.find((r) => r.event === "server:tool_call_cancel" && r.payload.req_id === reqId),
  );
  assert.deepEqual(cancel.payload, { agent: "agent-1", req_id: reqId });
});

void test("abort signal: cancel emitted, the Computer's cancelled answer returned", async () => {
  let reqId = "";
  // Like a Computer: the pending call is answered "cancelled" once the cancel arrives.
  fake.on(
    "client:tool_call",
    (_req, socket) =>
      new Promise((resolve) => {
        socket.once("server:tool_call_cancel", (c: { req_id: string }) => {
          assert.equal(c.req_id, reqId);
          resolve({
            content: [{ type: "text", text: "cancelled" }],
            isError: true,
            meta: { a2c_cancelled: true, a2c_cancel_reason: "agent_requested" },
          });
        });
      }),
  );
  const ac = new AbortController();
  const p = agent.callTool(
    COMPUTER,
    "slow",
    {},
    { timeout: 30, signal: ac.signal, onRequestId: (id) => (reqId = id) },
  );
  await waitFor(() => fake.received.find((r) => r.payload.req_id === reqId && reqId !== ""));
  ac.abort();
  const res = await p;
  assert.equal(res.isError, true);
  assert.equal(res.meta?.a2c_cancelled, true);
  assert.equal((res.content[0] as { text: string }).text, "cancelled");
});

void test("the sidebanded 5 MB PNG comes back byte-identical", async () => {
  const big = testBytes(5 * 1024 * 1024, 42);
  blobs["h-big"] = big;
  fake.on("client:get_blob", serve(big, { mime: "image/png", cap: 64 * 1024 }));
  fake.on("client:tool_call", () => ({
    content: [
      {
        type: "image",
        data: "",
        mimeType: "image/png",
        _meta: { a2c_blob_handle: "h-big", a2c_total_size: big.length, a2c_sha256: sha256(big) },
      },
    ],
  }));
  const res = await agent.callTool(COMPUTER, "render");
  assert.ok(Buffer.from((res.content[0] as Item).data, "base64").equals(big));
});

async function waitFor<T>(probe: () => T | undefined): Promise<T> {
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
}
