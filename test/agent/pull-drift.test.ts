import assert from "node:assert/strict";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { BlobChangedError, IntegrityError } from "../../agent/errors.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import {
  COMPUTER,
  answerFor,
  sha256,
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

void test("source rewritten mid-read: restart from offset 0, never splice", async () => {
  const v1 = testBytes(8000, 1);
  const v2 = testBytes(8000, 2); // same size, other content
  let served = 0;
  fake.on("client:get_blob", (req) => {
    served++;
    // The first 3 answers come from v1, everything after from v2.
    return answerFor(served <= 3 ? v1 : v2, req);
  });
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "d1", {
    chunkBytes: 1000,
    window: 2,
  });
  assert.deepEqual(value, v2, "only bytes of the new version");
  assert.equal(info.sha256, sha256(v2));
  assert.equal(info.stats.restarts, 1);
  const offsets = fake
    .blobRequests()
    .slice(n)
    .map((r) => r.chunk_offset);
  assert.equal(offsets.filter((o) => o === 0).length, 2, "offset 0 asked again after the drift");
});

void test("size change mid-read restarts too", async () => {
  const v1 = testBytes(5000, 3);
  const v2 = testBytes(7000, 4);
  let served = 0;
  fake.on("client:get_blob", (req) => answerFor(++served <= 2 ? v1 : v2, req));
  const got = await agent.readBlob(COMPUTER, "d2", { chunkBytes: 1000, window: 1 });
  assert.deepEqual(got, v2);
});

void test("final sha256 mismatch re-reads (bounded) then fails with IntegrityError", async () => {
  const bytes = testBytes(3000, 5);
  const lie = sha256(Buffer.from("something else"));
  fake.on("client:get_blob", (req) => answerFor(bytes, req, { sha: lie }));
  const n = fake.blobRequests().length;
  await assert.rejects(
    agent.readBlob(COMPUTER, "d3", { chunkBytes: 1000, rereads: 2 }),
    (err: unknown) => err instanceof IntegrityError && !(err instanceof BlobChangedError),
  );
  const reqs = fake.blobRequests().slice(n);
  assert.equal(reqs.length, 9, "three whole reads of three chunks");
  assert.equal(reqs.filter((r) => r.chunk_offset === 0).length, 3);
});

void test("a corrupted chunk once is cured by one re-read", async () => {
  const bytes = testBytes(3000, 6);
  let corrupt = true;
  fake.on("client:get_blob", (req) => {
    const a = answerFor(bytes, req);
    if (corrupt && req.chunk_offset === 1000) {
      corrupt = false;
      const b = Buffer.from(a.blob as string, "base64");
      b[0] = b[0]! ^ 0xff;
      a.blob = b.toString("base64");
    }
    return a;
  });
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "d4", { chunkBytes: 1000 });
  assert.deepEqual(value, bytes);
  assert.equal(info.stats.restarts, 1);
});

void test("producer sha256 differs from the Computer's: BlobChangedError after one request", async () => {
  const bytes = testBytes(3000, 7);
  fake.on("client:get_blob", (req) => answerFor(bytes, req));
  const n = fake.blobRequests().length;
  await assert.rejects(
    agent.readBlob(COMPUTER, "d5", { expectedSha256: sha256(Buffer.from("x")), window: 8 }),
    BlobChangedError,
  );
  assert.equal(fake.blobRequests().length - n, 1);
  await assert.rejects(
    agent.readBlob(COMPUTER, "d5", { expectedSize: 1, window: 8 }),
    BlobChangedError,
  );
});

void test("drift on every read gives up with BlobChangedError", async () => {
  let version = 0;
  fake.on("client:get_blob", (req) => answerFor(testBytes(4000, 100 + version++), req));
  await assert.rejects(
    agent.readBlob(COMPUTER, "d6", { chunkBytes: 1000, rereads: 2 }),
    BlobChangedError,
  );
});
