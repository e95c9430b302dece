/**
 * `FileSink` writes in large batches: a download of many small chunks costs one `writev` per
 * `FILE_WRITE_BATCH_BYTES` (not one write per chunk), in both carriages; past two batches held,
 * commits make the pull wait; every `FILE_WRITEBACK_BYTES` written, the disk is asked to start
 * writing in the background. The file holds exactly the source bytes, also when answers arrive
 * out of order. The counts come from the sink's result (`writes`, `writebacks`).
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pullBlob } from "../../agent/pull.ts";
import {
  FILE_CHECKPOINT_MS,
  FILE_WRITEBACK_BYTES,
  FILE_WRITE_BATCH_BYTES,
  FileSink,
} from "../../agent/file-sink.ts";
import type { AgentClient } from "../../agent/client.ts";
import {
  answerFor,
  COMPUTER,
  type FakeServer,
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
  dir = await mkdtemp(join(tmpdir(), "file-sink-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SIZE = 3 * FILE_WRITE_BATCH_BYTES + 4321;

for (const binary of [true, false]) {
  void test(`${binary ? "binary" : "base64"}: 16 KiB chunks, out of order, few writes`, async () => {
    const bytes = testBytes(SIZE, binary ? 5 : 6);
    fake.on("client:get_blob", async (req) => {
      // Every third answer waits a turn, so chunks reach the sink's prefix out of order.
      if (((req.chunk_offset as number) / 16384) % 3 === 0)
        await new Promise((r) => setImmediate(r));
      return answerFor(bytes, req);
    });
    const path = join(dir, `out-${String(binary)}.bin`);
    const sink = new FileSink(path);
    const { value, info } = await pullBlob(agent, COMPUTER, `h-${String(binary)}`, sink, {
      binary,
      chunkBytes: 16384,
    });
    assert.equal(value.size, SIZE);
    assert.equal(info.carriage, binary ? "binary" : "base64");
    assert.equal(sha256(await readFile(path)), sha256(bytes));
    const chunks = Math.ceil(SIZE / 16384);
    // A batch is also written once it waited FILE_CHECKPOINT_MS (a resume loses no more).
    const timed = Math.ceil(info.stats.elapsedMs / FILE_CHECKPOINT_MS);
    assert.ok(
      value.writes <= Math.ceil(SIZE / FILE_WRITE_BATCH_BYTES) + 1 + timed,
      `${value.writes} writes for ${chunks} chunks in ${info.stats.elapsedMs.toFixed(0)} ms`,
    );
    assert.deepEqual(
      (await readdir(dir)).filter((f) => f.startsWith(".") || f.endsWith(".a2c-part")),
      [],
      "no partial file",
    );
  });
}

void test("backpressure: past the batch being written and one gathered, commits answer a promise", async () => {
  const chunk = 512 * 1024;
  const perBatch = FILE_WRITE_BATCH_BYTES / chunk;
  const total = 4 * FILE_WRITE_BATCH_BYTES;
  const path = join(dir, "pressure.bin");
  const sink = new FileSink(path);
  await sink.begin(total);
  const bytes = testBytes(total, 9);
  const answers: Array<Promise<void> | void> = [];
  // All commits in one turn: no write can complete in between.
  for (let at = 0; at < total; at += chunk) {
    answers.push(sink.commit(at, Buffer.from(bytes.subarray(at, at + chunk))));
  }
  const waits = answers.map((a) => a !== undefined);
  // Batch 1 is written as soon as it is full; batch 2 gathers meanwhile; from the chunk that
  // fills batch 2 on, every commit waits.
  assert.deepEqual(waits.slice(0, 2 * perBatch - 1), Array(2 * perBatch - 1).fill(false));
  assert.deepEqual(
    waits.slice(2 * perBatch - 1),
    Array(answers.length - 2 * perBatch + 1).fill(true),
  );
  await Promise.all(answers.filter((a): a is Promise<void> => a !== undefined));
  const result = await sink.finish();
  assert.equal(result.size, total);
  assert.equal(sha256(await readFile(path)), sha256(bytes));
  assert.equal(result.writes, 4);
});

void test("writeback starts in the background every FILE_WRITEBACK_BYTES written", async () => {
  const chunk = 1024 * 1024;
  const total = 2 * FILE_WRITEBACK_BYTES + 3 * chunk;
  const path = join(dir, "writeback.bin");
  const sink = new FileSink(path);
  await sink.begin(total);
  const bytes = testBytes(total, 11);
  for (let at = 0; at < total; at += chunk) {
    await sink.commit(at, Buffer.from(bytes.subarray(at, at + chunk)));
  }
  const { writebacks } = await sink.finish();
  assert.ok(writebacks >= 1 && writebacks <= 2, `${writebacks}`);
  assert.equal(sha256(await readFile(path)), sha256(bytes));
});
