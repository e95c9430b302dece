/**
 * `downloadBlob(..., { resume: true })` against a scripted Computer on a real socket.io Server
 * (D85): an aborted download keeps `<path>.a2c-part`; a resume hashes its prefix again and
 * goes on from it; a flipped byte or a record that fails its checksum is never trusted (from 0,
 * the event says why); a torn newest record falls back to the slot before it; a download that
 * fails for its content removes the partial file; `maxTimeMs` ends a pull and keeps it. And the
 * client's `maxRate` is shared: two pulls at once take twice as long as one. A consumer that
 * holds a stream back is not judged by the minimum progress.
 */
import assert from "node:assert/strict";
import { mkdtemp, open, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { IntegrityError, TooSlowError } from "../../agent/errors.ts";
import { TRAILER_SLOT, partialPath, readRecord } from "../../agent/partial-file.ts";
import type { ResumeEvent } from "../../agent/file-sink.ts";
import {
  COMPUTER,
  answerFor,
  connectAgent,
  sha256,
  testBytes,
  useFakeComputer,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

const SIZE = 6 * 1024 * 1024;
const bytes = testBytes(SIZE, 11);
let fake: FakeServer;
let agent: AgentClient;
let dir: string;
let asked = 0;

useFakeComputer((f, a) => {
  fake = f;
  agent = a;
  fake.on("client:get_blob", (req) => {
    asked += Buffer.byteLength((answerFor(bytes, req).blob as Buffer) ?? "");
    return answerFor(bytes, req);
  });
});
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "download-resume-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Downloads to `file` and aborts once half of it is held; the partial file stays. */
async function abortAtHalf(file: string): Promise<void> {
  const stop = new AbortController();
  await assert.rejects(
    agent.downloadBlob(COMPUTER, "h", file, {
      chunkBytes: 65536,
      maxRate: 8 * 1024 * 1024,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.bytes >= SIZE / 2) stop.abort(new Error("stop here"));
      },
    }),
    /stop here/,
  );
  assert.deepEqual(await readdir(dir), [`${file.split("/").at(-1)}.a2c-part`]);
}

async function resume(file: string) {
  const events: ResumeEvent[] = [];
  asked = 0;
  const info = await agent.downloadBlob(COMPUTER, "h", file, {
    resume: true,
    onResume: (e) => events.push(e),
  });
  assert.equal(sha256(await readFile(file)), sha256(bytes));
  assert.deepEqual(await readdir(dir), [file.split("/").at(-1)]);
  await rm(file);
  return { info, events, moved: asked };
}

void test("an aborted download resumes from its verified prefix", async () => {
  const file = join(dir, "a.bin");
  await abortAtHalf(file);
  const { info, events, moved } = await resume(file);
  assert.equal(events.length, 1);
  const e = events[0]!;
  assert.ok(e.kind === "resumed" && e.offset >= SIZE / 2 - 65536, JSON.stringify(e));
  assert.equal(info.stats.resumedFrom, e.offset);
  assert.ok(moved <= SIZE - e.offset + 65536, `${moved} bytes moved`);
});

void test("a flipped byte in the prefix is never trusted: from 0, and the event says why", async () => {
  const file = join(dir, "b.bin");
  await abortAtHalf(file);
  const fh = await open(partialPath(file), "r+");
  const one = Buffer.alloc(1);
  await fh.read(one, 0, 1, 1000);
  one[0] = one[0]! ^ 0xff;
  await fh.write(one, 0, 1, 1000);
  await fh.close();
  const { info, events, moved } = await resume(file);
  assert.deepEqual(
    events.map((e) => e.kind),
    ["unusable"],
  );
  assert.match((events[0] as { why: string }).why, /do not match its record/);
  assert.equal(info.stats.resumedFrom, 0);
  assert.ok(moved >= SIZE);
});

void test("a torn newest record falls back to the one before it; none valid is from 0", async () => {
  const file = join(dir, "c.bin");
  await abortAtHalf(file);
  const part = partialPath(file);
  const fh = await open(part, "r+");
  const newest = (await readRecord(fh))!;
  const { size } = await fh.stat();
  const slotAt = (seq: number): number => size - 2 * TRAILER_SLOT + (seq % 2) * TRAILER_SLOT;
  await fh.write(Buffer.from("torn"), 0, 4, slotAt(newest.seq) + 20);
  const older = (await readRecord(fh))!;
  assert.equal(older.seq, newest.seq - 1);
  await fh.close();
  const first = await resume(file);
  assert.deepEqual(
    first.events.map((e) => e.kind),
    ["resumed"],
  );
  assert.equal(first.info.stats.resumedFrom, older.mark.offset);
  assert.ok(older.mark.offset >= SIZE / 2 - 65536, `${older.mark.offset}`);

  await abortAtHalf(file);
  const again = await open(part, "r+");
  for (const seq of [0, 1]) await again.write(Buffer.from("torn"), 0, 4, slotAt(seq) + 20);
  await again.close();
  const second = await resume(file);
  assert.deepEqual(second.events, [
    { kind: "unusable", partial: part, why: "it has no valid record" },
  ]);
  assert.equal(second.info.stats.resumedFrom, 0);
});

void test("a source that shrank in between: the first request past its end is asked at 0", async () => {
  const file = join(dir, "e.bin");
  await abortAtHalf(file);
  const small = testBytes(1024 * 1024, 12);
  fake.on("client:get_blob", (req) => answerFor(small, req));
  try {
    const events: ResumeEvent[] = [];
    const info = await agent.downloadBlob(COMPUTER, "h", file, {
      resume: true,
      onResume: (e) => events.push(e),
    });
    assert.equal(sha256(await readFile(file)), sha256(small));
    assert.deepEqual(events, [
      {
        kind: "changed",
        partial: partialPath(file),
        was: { sha256: sha256(bytes), totalSize: SIZE },
      },
    ]);
    assert.equal(info.stats.restarts, 0);
    assert.deepEqual(await readdir(dir), ["e.bin"]);
    await rm(file);
  } finally {
    fake.on("client:get_blob", (req) => answerFor(bytes, req));
  }
});

void test("a download that fails for its content removes the partial file", async () => {
  const file = join(dir, "d.bin");
  const lie = await connectAgent(fake, { name: "agent-2" });
  try {
    fake.on("client:get_blob", (req) => answerFor(bytes, req, { sha: "0".repeat(64) }));
    await assert.rejects(
      lie.downloadBlob(COMPUTER, "h", file, { rereads: 0 }),
      (e: unknown) => e instanceof IntegrityError,
    );
    assert.deepEqual(await readdir(dir), []);
  } finally {
    fake.on("client:get_blob", (req) => answerFor(bytes, req));
    await lie.close();
  }
});

void test("maxTimeMs ends a pull that outlasts it (TooSlowError max_time), the partial kept", async () => {
  const file = join(dir, "f.bin");
  const slow = await connectAgent(fake, { name: "agent-4" });
  try {
    const started = performance.now();
    await assert.rejects(
      slow.downloadBlob(COMPUTER, "h", file, { maxRate: 1024 * 1024, maxTimeMs: 1000 }),
      (e: unknown) => e instanceof TooSlowError && e.reason === "max_time",
    );
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 3, `${seconds} s`);
    assert.deepEqual(await readdir(dir), ["f.bin.a2c-part"]);
    await rm(partialPath(file));
  } finally {
    await slow.close();
  }
});

void test("a consumer that holds a stream back is not judged by the minimum progress", async () => {
  let got = 0;
  let paused = false;
  for await (const c of agent.blobChunks(COMPUTER, "h", {
    chunkBytes: 65536,
    window: 2,
    speedLimit: 1,
    speedTimeMs: 200,
  })) {
    got += c.length;
    if (!paused) {
      paused = true;
      // Three windows of the rule with the pull held back by its consumer.
      await new Promise((resolve) => setTimeout(resolve, 600));
    }
  }
  assert.equal(got, SIZE);
});

void test("the client's maxRate is shared: two pulls at once take as long as both bytes", async () => {
  const capped = await connectAgent(fake, { name: "agent-3", maxRate: 4 * 1024 * 1024 });
  try {
    const half = 1024 * 1024;
    const started = performance.now();
    await Promise.all([
      capped.readBlob(COMPUTER, "x", { chunkBytes: half }),
      capped.readBlob(COMPUTER, "y", { chunkBytes: half }),
    ]);
    const seconds = (performance.now() - started) / 1000;
    // 12 MiB at 4 MiB/s (one pull alone: 1.5 s), less the bucket's burst and the last chunk.
    assert.ok(seconds >= 2.5, `${seconds} s`);
  } finally {
    await capped.close();
  }
});
