/**
 * The CLI's documented exit codes (docs/configuration.md, "Agent CLI"), each from a real process:
 * 0 help, 2 usage, 3 protocol (a 4018 refusal, a busy refusal), 4 transport (nothing listening,
 * a 408 relay timeout), 5 integrity (bytes failing their sha256), 6 output (a size no file can
 * hold). The full disk and the in-memory bound (6) are in cli-hostile-computer.test.ts, 130 and
 * 143 in cli-interrupt.test.ts; 1 is left for failures nobody foresaw (a bug). The peer is the
 * scripted fake Computer (a real socket.io server), so each outcome is exact.
 */
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../support/agent-stack.ts";
import {
  OFFICE,
  answerFor,
  blobError,
  serve,
  sha256,
  useFakeServer,
  useTempDir,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let dir: string;

useFakeServer((f) => (fake = f));
useTempDir("agent-cli-codes-", (d) => (dir = d));

const base = (): string[] => ["--server", fake.url, "--office", OFFICE, "--json"];

void test("--help documents the exit codes (0); missing flags are usage errors (2)", async () => {
  const help = await runCli(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Exit codes:/);
  const usage = await runCli(["computers"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--server/);
});

void test("a 4018 refusal is a protocol error (3) with its reason in --json", async () => {
  fake.on("client:get_blob", () => blobError("invalid_handle"));
  const r = await runCli([...base(), "blob", "pc", "garbage", "-o", join(dir, "x")]);
  assert.equal(r.code, 3, r.stderr);
  const out = JSON.parse(r.stdout) as { error: { code: number; reason: string } };
  assert.equal(out.error.code, 4018);
  assert.equal(out.error.reason, "invalid_handle");
  assert.deepEqual(await readdir(dir), [], "no partial file left");
});

void test("nothing listening is a transport failure (4)", async () => {
  const r = await runCli(["--server", "http://127.0.0.1:1", "--office", "x", "computers"]);
  assert.equal(r.code, 4, r.stderr);
});

void test("a busy refusal is a protocol error (3), a 408 a transport failure (4)", async () => {
  fake.on("client:get_skills", () => ({
    code: 500,
    message: "Too many requests",
    details: { reason: "busy", limit: "events_per_second" },
  }));
  const busy = await runCli([...base(), "skills", "pc"]);
  assert.equal(busy.code, 3, busy.stderr);
  assert.equal((JSON.parse(busy.stdout) as { exit_code: number }).exit_code, 3);
  fake.on("client:get_skills", () => ({
    code: 408,
    message: "Computer did not answer in time",
    details: { computer_name: "pc" },
  }));
  const late = await runCli([...base(), "skills", "pc"]);
  assert.equal(late.code, 4, late.stderr);
  const out = JSON.parse(late.stdout) as { error: { code: number; summary: string } };
  assert.equal(out.error.code, 408);
  assert.equal(out.error.summary, "Computer 'pc' did not answer in time (408)");
});

void test("a size no file can hold is an output failure (6), and no file is left", async () => {
  const bytes = testBytes(5000, 4);
  fake.on("client:get_blob", (req) => ({
    ...answerFor(bytes, req, { total: 2 ** 60 }),
    eof: false,
  }));
  const r = await runCli([...base(), "blob", "pc", "h", "-o", join(dir, "huge.bin")]);
  assert.equal(r.code, 6, r.stderr);
  const out = JSON.parse(r.stdout) as { error: { code: string; reason: string } };
  assert.deepEqual([out.error.code, out.error.reason], ["BLOB_TOO_LARGE", "file"]);
  assert.deepEqual(await readdir(dir), []);
});

void test("bytes that fail their sha256 are an integrity failure (5)", async () => {
  const bytes = testBytes(5000, 3);
  fake.on("client:get_blob", serve(bytes, { sha: sha256(Buffer.from("lie")) }));
  const r = await runCli([...base(), "blob", "pc", "h", "-o", join(dir, "lie.bin")]);
  assert.equal(r.code, 5, r.stderr);
});
