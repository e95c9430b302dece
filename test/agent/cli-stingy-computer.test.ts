/**
 * A pull that ends (D87): the CLI (the shipped build, a process) against a scripted
 * Computer on a real socket.io Server. One that answers 1 byte, or 1/64 of what is asked, without
 * `eof`, is a contract error after a bounded number of answers: one line naming the Computer,
 * exit 3, with the default settings, in seconds (the promise is 2 minutes). One that clamps to a
 * small ceiling of its own, or serves at 1 Mbit/s, is never cut, even with a 1 s progress window;
 * one slower than `--speed-limit` over `--speed-time` ends with one line and exit 4.
 */
import assert from "node:assert/strict";
import { readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../support/agent-stack.ts";
import {
  OFFICE,
  answerFor,
  sha256,
  useFakeServer,
  useTempDir,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

const MiB = 1024 * 1024;
const bytes = testBytes(8 * MiB, 7);

let fake: FakeServer;
let dir: string;

/** How the Computer answers each handle: a function of the request. */
const scripts = new Map<string, (req: Record<string, unknown>) => unknown>();

useFakeServer((f) => {
  fake = f;
  fake.on("client:get_blob", (req) => scripts.get(req.blob_handle as string)!(req));
});
useTempDir("cli-stingy-", (d) => (dir = d));

/** An answer of `len(asked)` bytes of `bytes` at the asked offset (never `eof` short of it). */
function shortAnswer(req: Record<string, unknown>, len: (asked: number) => number) {
  const asked = (req.max_chunk_bytes as number | undefined) ?? 1 << 20;
  return answerFor(bytes, req, { cap: Math.max(1, len(asked)) });
}

async function blob(handle: string, extra: string[] = []) {
  const file = join(dir, `${handle}.bin`);
  const started = performance.now();
  const r = await runCli([
    ...["--server", fake.url, "--office", OFFICE, "-q"],
    ...["blob", "pc", handle, "-o", file, ...extra],
  ]);
  return { ...r, file, seconds: (performance.now() - started) / 1000 };
}

for (const [what, len] of [
  ["1 byte", () => 1],
  ["1/64 of what is asked", (asked: number) => Math.floor(asked / 64)],
] as const) {
  void test(`a Computer answering ${what}: one line naming it, exit 3, within seconds`, async () => {
    const handle = what.startsWith("1 byte") ? "one-byte" : "sixty-fourth";
    scripts.set(handle, (req) => shortAnswer(req, len));
    const n = fake.blobRequests().length;
    const r = await blob(handle);
    const asked = fake.blobRequests().length - n;
    console.log(`answering ${what}: ended in ${r.seconds.toFixed(2)} s after ${asked} requests`);
    assert.equal(r.code, 3, r.stderr);
    const lines = r.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0]!,
      /^a2c-agent: Computer 'pc' broke the get_blob contract: chunk at offset \d+: the Computer keeps answering far less than asked without eof \(16 answers in a row of at most \d+ bytes?/,
    );
    assert.ok(r.seconds < 60, `${r.seconds} s`);
    assert.deepEqual(await readdir(dir), [], "no file left");
  });
}

void test("a Computer that clamps to a small ceiling of its own (2 KiB) is never cut", async () => {
  const served = bytes.subarray(0, MiB);
  scripts.set("clamps", (req) => answerFor(served, req, { cap: 2048 }));
  const r = await blob("clamps", ["--speed-time", "1"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(sha256(await readFile(r.file)), sha256(bytes.subarray(0, MiB)));
  await rm(r.file);
});

/** Answers of at most `cap` bytes, paced so that the Computer serves `rate` bytes a second. */
function paced(total: number, rate: number, cap: number) {
  const served = bytes.subarray(0, total);
  let due = 0;
  return (req: Record<string, unknown>) => {
    const answer = answerFor(served, req, { cap });
    const len = Buffer.byteLength(answer.blob as Buffer);
    const now = performance.now();
    due = Math.max(due, now) + (1000 * len) / rate;
    return new Promise((resolve) => setTimeout(() => resolve(answer), due - now));
  };
}

void test("an honest 1 Mbit/s Computer is never cut by the default minimum progress", async () => {
  const total = 384 * 1024;
  scripts.set("one-mbit", paced(total, 125_000, 16384));
  const r = await blob("one-mbit", ["--speed-time", "1"]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.seconds >= 3, `${r.seconds} s: the pacing held`);
  assert.equal(sha256(await readFile(r.file)), sha256(bytes.subarray(0, total)));
  await rm(r.file);
});

void test("a Computer under --speed-limit for --speed-time: one line, exit 4, the partial kept", async () => {
  scripts.set("trickle", paced(MiB, 2048, 2048));
  const r = await blob("trickle", ["--speed-limit", "8k", "--speed-time", "1"]);
  console.log(`a 2 KiB/s Computer under an 8 KiB/s minimum: ended in ${r.seconds.toFixed(2)} s`);
  assert.equal(r.code, 4, r.stderr);
  const lines = r.stderr.trimEnd().split("\n");
  assert.match(
    lines[0]!,
    /^a2c-agent: the download from Computer 'pc' is too slow: the pull moved \d+ bytes in 1 s, less than the minimum 8192 bytes a second$/,
  );
  assert.match(lines[1]!, /^hint: .*-c resumes it$/);
  assert.equal(lines.length, 2, r.stderr);
  assert.deepEqual(await readdir(dir), ["trickle.bin.a2c-part"]);
  await rm(join(dir, "trickle.bin.a2c-part"));
});
