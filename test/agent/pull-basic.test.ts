import assert from "node:assert/strict";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import {
  COMPUTER,
  serve,
  useFakeComputer,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;

useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});

function requestsSince(n: number): Record<string, unknown>[] {
  return fake.blobRequests().slice(n);
}

void test("single chunk: one request, bytes and metadata", async () => {
  const bytes = testBytes(1000);
  fake.on("client:get_blob", serve(bytes, { mime: "image/png" }));
  const n = fake.blobRequests().length;
  const { readBlobWithInfo } = await import("../../agent/pull.ts");
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "h1");
  assert.deepEqual(value, bytes);
  assert.equal(info.mimeType, "image/png");
  assert.equal(info.totalSize, 1000);
  const reqs = requestsSince(n);
  assert.equal(reqs.length, 1);
  assert.equal(reqs[0]!.chunk_offset, 0);
  assert.equal(reqs[0]!.blob_handle, "h1");
  assert.equal(reqs[0]!.computer, COMPUTER);
  assert.equal(reqs[0]!.agent, "agent-1");
});

void test("multi-chunk: every offset asked once, reassembled in order", async () => {
  const bytes = testBytes(10 * 1024 + 17, 7);
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  const got = await agent.readBlob(COMPUTER, "h2", { chunkBytes: 1024, window: 4 });
  assert.deepEqual(got, bytes);
  const offsets = requestsSince(n).map((r) => r.chunk_offset as number);
  assert.equal(offsets.length, 11);
  assert.deepEqual(
    [...offsets].sort((a, b) => a - b),
    [...new Set(offsets)].sort((a, b) => a - b),
  );
  for (const r of requestsSince(n)) assert.ok((r.max_chunk_bytes as number) <= 1024);
});

void test("empty blob: one request, empty buffer", async () => {
  const bytes = Buffer.alloc(0);
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  const got = await agent.readBlob(COMPUTER, "h3", { window: 8 });
  assert.equal(got.length, 0);
  assert.equal(requestsSince(n).length, 1);
});

void test("parallel equals serial for windows 1..16", async () => {
  const bytes = testBytes(37 * 1000 + 3, 3);
  // Answers arrive out of order: later offsets are answered sooner.
  fake.on("client:get_blob", async (req) => {
    const off = (req.chunk_offset as number) ?? 0;
    await new Promise((r) => setImmediate(r));
    if (off % 3000 === 0) await new Promise((r) => setImmediate(r));
    return serve(bytes)(req, undefined as never);
  });
  const serial = await agent.readBlob(COMPUTER, "h4", { window: 1, chunkBytes: 1000 });
  assert.deepEqual(serial, bytes);
  for (let w = 2; w <= 16; w++) {
    const n = fake.blobRequests().length;
    const got = await agent.readBlob(COMPUTER, "h4", { window: w, chunkBytes: 1000 });
    assert.deepEqual(got, serial, `window ${w}`);
    assert.equal(requestsSince(n).length, 38, `window ${w}: each chunk asked exactly once`);
  }
});

void test("a Computer that clamps below the asked size: gaps are filled, plan follows its size", async () => {
  const bytes = testBytes(9000, 11);
  fake.on("client:get_blob", serve(bytes, { cap: 700 }));
  const got = await agent.readBlob(COMPUTER, "h5", { chunkBytes: 4096, window: 8 });
  assert.deepEqual(got, bytes);
});

void test("binary carriage: asks blob_format binary, accepts Buffers", async () => {
  const bytes = testBytes(300_000, 5);
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  const got = await agent.readBlob(COMPUTER, "h6", { binary: true, chunkBytes: 65536 });
  assert.deepEqual(got, bytes);
  const reqs = requestsSince(n);
  assert.ok(reqs.every((r) => r.blob_format === "binary"));
  assert.equal(reqs.length, 5);
});

void test("base64 request answered in binary (and vice versa) is accepted", async () => {
  const bytes = testBytes(5000, 9);
  fake.on("client:get_blob", (req) =>
    serve(bytes)(
      { ...req, blob_format: (req.chunk_offset as number) % 2000 === 0 ? "binary" : undefined },
      undefined as never,
    ),
  );
  const got = await agent.readBlob(COMPUTER, "h7", { chunkBytes: 1000 });
  assert.deepEqual(got, bytes);
  const got2 = await agent.readBlob(COMPUTER, "h7", { chunkBytes: 1000, binary: true });
  assert.deepEqual(got2, bytes);
});

void test("onProgress reports growing byte counts up to the total", async () => {
  const bytes = testBytes(4096, 13);
  fake.on("client:get_blob", serve(bytes));
  const seen: number[] = [];
  await agent.readBlob(COMPUTER, "h8", {
    chunkBytes: 1024,
    onProgress: (p) => {
      assert.equal(p.total, 4096);
      seen.push(p.bytes);
    },
  });
  assert.deepEqual(seen, [1024, 2048, 3072, 4096]);
});

void test("every request carries a fresh req_id", async () => {
  const ids = fake.received.map((r) => r.payload.req_id).filter((x) => x !== undefined);
  assert.ok(ids.length > 50);
  assert.equal(new Set(ids).size, ids.length);
});
