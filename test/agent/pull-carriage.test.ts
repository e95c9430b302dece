/**
 * Carriage: the SDK asks for binary carriage by default (D19) and goes on correctly when a
 * Computer ignores `blob_format` (base64 answers, no echo): the rest of the read asks in base64,
 * never more than the base64 chunk size unless `chunkBytes` was given. `binary: false` is the
 * spec's mode and sends no `blob_format` at all. The chunk sizes are ceilings the path's own
 * sizes stay under (D40); on loopback they reach them. Every read is checked against the sha256
 * of the source bytes.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  readBlobWithInfo,
} from "../../agent/pull.ts";
import {
  COMPUTER,
  answerFor,
  serve,
  sha256,
  testBytes,
  useFakeComputer,
  type FakeServer,
  type Script,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});

const SIZE = 2 * 1024 * 1024 + 12_345;
const bytes = testBytes(SIZE, 21);

/** A conforming Computer that does not implement D19: it ignores the unknown request field. */
const ignoresBlobFormat: Script = (req) => answerFor(bytes, { ...req, blob_format: undefined });

function requestsSince(n: number): Record<string, unknown>[] {
  return fake.blobRequests().slice(n);
}

void test("defaults against a Computer that ignores blob_format: base64 from the second request on", async () => {
  fake.on("client:get_blob", ignoresBlobFormat);
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c1");
  assert.equal(sha256(value), sha256(bytes));
  assert.equal(info.carriage, "base64");
  const [first, ...rest] = requestsSince(n);
  assert.equal(first!.blob_format, "binary");
  assert.ok((first!.max_chunk_bytes as number) <= DEFAULT_BINARY_CHUNK_BYTES);
  assert.ok(rest.length > 0);
  for (const r of rest) {
    assert.equal("blob_format" in r, false, "no blob_format once the Computer answered base64");
    assert.ok((r.max_chunk_bytes as number) <= DEFAULT_BASE64_CHUNK_BYTES);
  }
  assert.ok(rest.some((r) => r.max_chunk_bytes === DEFAULT_BASE64_CHUNK_BYTES));
  assert.equal(info.stats.requests, rest.length + 1);
});

void test("a chunk size the caller gave is kept after falling back to base64", async () => {
  fake.on("client:get_blob", ignoresBlobFormat);
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c2", { chunkBytes: 300_000 });
  assert.equal(sha256(value), sha256(bytes));
  assert.equal(info.carriage, "base64");
  const sizes = requestsSince(n).map((r) => r.max_chunk_bytes as number);
  assert.ok(sizes.every((size) => size <= 300_000));
  // Past the base64 default: the caller's ceiling, not the default's, bounds the fallback's
  // chunks (how close they come to it is the controller's, slower on a loaded machine).
  const most = Math.max(...sizes);
  assert.ok(most > DEFAULT_BASE64_CHUNK_BYTES, `chunks asked: ${sizes.join(" ")}`);
});

void test("downloadBlob and blobChunks fall back the same way", async () => {
  fake.on("client:get_blob", ignoresBlobFormat);
  const chunks: Buffer[] = [];
  const stream = agent.blobChunks(COMPUTER, "c3");
  for (;;) {
    const next = await stream.next();
    if (next.done) {
      assert.equal(next.value?.carriage, "base64");
      break;
    }
    chunks.push(next.value);
  }
  assert.equal(sha256(Buffer.concat(chunks)), sha256(bytes));
  const dir = await mkdtemp(join(tmpdir(), "agent-carriage-"));
  try {
    const info = await agent.downloadBlob(COMPUTER, "c3", join(dir, "out.bin"));
    assert.equal(info.carriage, "base64");
    assert.equal(sha256(await readFile(join(dir, "out.bin"))), sha256(bytes));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test("spec mode (binary: false) sends no blob_format at all", async () => {
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c4", { binary: false });
  assert.equal(sha256(value), sha256(bytes));
  assert.equal(info.carriage, "base64");
  const reqs = requestsSince(n);
  for (const r of reqs) {
    assert.equal("blob_format" in r, false);
    assert.ok((r.max_chunk_bytes as number) <= DEFAULT_BASE64_CHUNK_BYTES);
  }
  const asked = reqs.reduce((sum, r) => sum + (r.max_chunk_bytes as number), 0);
  assert.ok(asked >= SIZE && asked < SIZE + DEFAULT_BASE64_CHUNK_BYTES, "each byte asked once");
});

void test("defaults against a Computer that honours binary: every chunk binary, up to 512 KiB", async () => {
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c5");
  assert.equal(sha256(value), sha256(bytes));
  assert.equal(info.carriage, "binary");
  const reqs = requestsSince(n);
  assert.ok(reqs.every((r) => r.blob_format === "binary"));
  assert.ok(reqs.every((r) => (r.max_chunk_bytes as number) <= DEFAULT_BINARY_CHUNK_BYTES));
});

void test("one chunk answered in base64 among binary ones: accepted, reported as base64", async () => {
  let answered = 0;
  fake.on("client:get_blob", (req) =>
    answerFor(bytes, ++answered === 2 ? { ...req, blob_format: undefined } : req),
  );
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c6");
  assert.equal(sha256(value), sha256(bytes));
  assert.equal(info.carriage, "base64");
});
