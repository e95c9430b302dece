import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { BlobCache } from "../../agent/cache.ts";
import type { AgentClient } from "../../agent/client.ts";
import { BlobGoneError, BlobChangedError } from "../../agent/errors.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import {
  answerFor,
  blobError,
  COMPUTER,
  type FakeServer,
  serve,
  sha256,
  testBytes,
  useFakeComputer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
let dir: string;

useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "agent-sinks-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

void test("downloadBlob writes the verified file atomically", async () => {
  const bytes = testBytes(100_000, 1);
  fake.on("client:get_blob", serve(bytes, { mime: "application/zip" }));
  const path = join(dir, "out.bin");
  const info = await agent.downloadBlob(COMPUTER, "f1", path, { chunkBytes: 4096, window: 8 });
  assert.deepEqual(await readFile(path), bytes);
  assert.equal(info.size, bytes.length);
  assert.equal(info.sha256, sha256(bytes));
  assert.equal(info.mimeType, "application/zip");
  assert.deepEqual((await readdir(dir)).sort(), ["out.bin"], "no temp file left");
});

void test("downloadBlob with binary carriage", async () => {
  const bytes = testBytes(300_000, 2);
  fake.on("client:get_blob", serve(bytes));
  const path = join(dir, "bin.bin");
  await agent.downloadBlob(COMPUTER, "f2", path, { binary: true, chunkBytes: 32768 });
  assert.deepEqual(await readFile(path), bytes);
  await rm(path);
});

void test("a failed download leaves no file and no temp file", async () => {
  const bytes = testBytes(10_000, 3);
  fake.on("client:get_blob", (req) =>
    (req.chunk_offset as number) >= 5000 ? blobError("gone") : answerFor(bytes, req),
  );
  const path = join(dir, "fail.bin");
  await assert.rejects(
    agent.downloadBlob(COMPUTER, "f3", path, { chunkBytes: 1000 }),
    BlobGoneError,
  );
  assert.deepEqual(
    (await readdir(dir)).filter((f) => f.includes("fail")),
    [],
  );
});

void test("blobChunks yields the bytes in order; Readable.from works", async () => {
  const bytes = testBytes(50_000, 4);
  fake.on("client:get_blob", async (req) => {
    // Answer later offsets first to force reordering.
    if ((req.chunk_offset as number) % 3000 === 0) await new Promise((r) => setImmediate(r));
    return answerFor(bytes, req);
  });
  const parts: Buffer[] = [];
  for await (const c of agent.blobChunks(COMPUTER, "s1", { chunkBytes: 1000, window: 6 })) {
    parts.push(c);
  }
  assert.deepEqual(Buffer.concat(parts), bytes);
  const viaStream: Buffer[] = [];
  for await (const c of Readable.from(agent.blobChunks(COMPUTER, "s1", { chunkBytes: 7000 }))) {
    viaStream.push(c as Buffer);
  }
  assert.deepEqual(Buffer.concat(viaStream), bytes);
});

void test("blobChunks: breaking out stops the pull", async () => {
  const bytes = testBytes(100_000, 5);
  fake.on("client:get_blob", serve(bytes));
  const n = fake.blobRequests().length;
  for await (const _c of agent.blobChunks(COMPUTER, "s2", { chunkBytes: 1000, window: 2 })) break;
  const asked = fake.blobRequests().length - n;
  assert.ok(asked < 10, `stopped early (${asked} requests)`);
});

void test("blobChunks: a source change after bytes left is a BlobChangedError", async () => {
  let served = 0;
  fake.on("client:get_blob", (req) => {
    if (req.blob_handle === "s3") served++; // late requests of the previous test do not count
    return answerFor(testBytes(6000, served <= 2 ? 10 : 11), req);
  });
  await assert.rejects(async () => {
    for await (const _c of agent.blobChunks(COMPUTER, "s3", { chunkBytes: 1000, window: 1 })) {
      // consume
    }
  }, BlobChangedError);
});

void test("cache: a verified pull is stored; a sha the cache holds pulls nothing", async () => {
  const cache = new BlobCache(join(dir, "cache"));
  const bytes = testBytes(20_000, 6);
  const sha = sha256(bytes);
  fake.on("client:get_blob", serve(bytes));
  await agent.readBlob(COMPUTER, "c1", { cache, chunkBytes: 4096 });
  assert.deepEqual(await readFile(cache.pathFor(sha)), bytes);

  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "c1", {
    cache,
    expectedSha256: sha,
  });
  assert.deepEqual(value, bytes);
  assert.equal(info.stats.fromCache, true);
  assert.equal(fake.blobRequests().length, n, "no chunk pulled");

  // Without a known sha only the first chunk is pulled, then the cache serves the rest.
  const path = join(dir, "from-cache.bin");
  await agent.downloadBlob(COMPUTER, "c1", path, { cache, chunkBytes: 4096 });
  assert.deepEqual(await readFile(path), bytes);
  assert.equal(fake.blobRequests().length, n + 1);
});

void test("cache: a corrupt entry is dropped and the blob pulled again", async () => {
  const cache = new BlobCache(join(dir, "cache2"));
  const bytes = testBytes(5000, 7);
  const sha = sha256(bytes);
  fake.on("client:get_blob", serve(bytes));
  await cache.store(sha, Buffer.from(testBytes(5000, 8)));
  const n = fake.blobRequests().length;
  const got = await agent.readBlob(COMPUTER, "c2", { cache, expectedSha256: sha });
  assert.deepEqual(got, bytes);
  assert.ok(fake.blobRequests().length > n);
  assert.deepEqual(await readFile(cache.pathFor(sha)), bytes, "re-stored after the pull");
});
