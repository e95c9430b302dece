/**
 * The pull's path (agent/path.ts, D40–D43) against a scripted Computer on loopback: `busy`
 * slows a pull and is asked again, never failing it while bytes arrive; a pull whose requests
 * only fail gives up after its stall time with the last failure; a lost answer is asked again
 * after a deadline from the round trips (seconds, not the 30 s request timeout), a read's first
 * chunk may take long (the Computer hashing); two pulls through one client share the path
 * evenly in what they cost the link; on loopback a fresh path leaves the least chunk and reaches
 * the ceiling. How fast a pull is, and how soon it fills a long path (a Computer that holds every
 * answer 600 ms), are the bench's `loopback` and `paths` figures and the controller's simulated
 * tests (test/agent/path-controller.test.ts): in this one process a busy machine's wait is a real
 * one, which the pull rightly reads as queue.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { ServerError } from "../../agent/errors.ts";
import { DEFAULT_BINARY_CHUNK_BYTES, readBlobWithInfo } from "../../agent/pull.ts";
import {
  COMPUTER,
  NO_ANSWER,
  answerFor,
  connectAgent,
  testBytes,
  useFakeComputer,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});

const busy = {
  code: 500,
  message: "Too many bytes queued for this client",
  details: { reason: "busy", limit: "unread_bytes" },
};

void test("busy answers are asked again, for as long as bytes arrive; the pull completes", async () => {
  const bytes = testBytes(2 * 1024 * 1024, 1);
  let n = 0;
  let answered = 0;
  let answeredBytes = 0;
  fake.on("client:get_blob", (req) => {
    // Every third request after the first is refused, for the whole read.
    if (req.chunk_offset !== 0 && ++n % 3 === 0) return busy;
    const offset = req.chunk_offset as number;
    answered += 1;
    answeredBytes += Math.min(req.max_chunk_bytes as number, bytes.length - offset);
    return answerFor(bytes, req);
  });
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "b1", { chunkBytes: 16384 });
  assert.deepEqual(value, bytes);
  assert.ok(info.stats.busy >= 30, `${info.stats.busy} busy answers`);
  // Only the refused were asked again: the answered chunks add up to the file, no byte twice
  // (startup's chunks are smaller than 16 KiB when a loaded machine delays the first answers).
  assert.equal(answeredBytes, bytes.length);
  assert.equal(info.stats.requests, answered + info.stats.busy);
  assert.equal(info.stats.timeouts + info.stats.resumes + info.stats.restarts, 0);
});

void test("a Computer that only answers busy: the read gives up after its stall time", async () => {
  const bytes = testBytes(100_000, 2);
  fake.on("client:get_blob", (req) => (req.chunk_offset === 0 ? answerFor(bytes, req) : busy));
  const t0 = performance.now();
  await assert.rejects(
    agent.readBlob(COMPUTER, "b2", { chunkBytes: 4096, stallTimeoutMs: 800 }),
    (err: unknown) => err instanceof ServerError && err.reason === "busy",
  );
  const took = performance.now() - t0;
  assert.ok(took >= 800 && took < 10_000, `gave up after ${took.toFixed(0)} ms`);
});

void test("a lost answer is asked again after the path's deadline, not the request timeout", async () => {
  const bytes = testBytes(256 * 1024, 3);
  let lost = false;
  fake.on("client:get_blob", (req) => {
    if (!lost && (req.chunk_offset as number) >= 128 * 1024) {
      lost = true;
      return NO_ANSWER;
    }
    return answerFor(bytes, req);
  });
  const t0 = performance.now();
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "t1", { chunkBytes: 8192 });
  const took = performance.now() - t0;
  assert.deepEqual(value, bytes);
  assert.equal(info.stats.timeouts, 1);
  assert.equal(info.stats.resumes, 0);
  assert.ok(took < 15_000, `asked again in seconds (${took.toFixed(0)} ms), not after 30 s`);
});

void test("a read's first chunk may take long (the Computer hashing): no timeout", async () => {
  const bytes = testBytes(64 * 1024, 4);
  fake.on("client:get_blob", async (req) => {
    if (req.chunk_offset === 0) await new Promise((r) => setTimeout(r, 2500));
    return answerFor(bytes, req);
  });
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "t2", { chunkBytes: 4096 });
  assert.deepEqual(value, bytes);
  assert.equal(info.stats.timeouts, 0);
});

void test("two pulls through one client take turns: even shares of what they cost the link", async () => {
  // Each pull's window could take the whole path's budget (32 chunks): the path decides.
  const a = testBytes(1024 * 1024, 5);
  const b = testBytes(1024 * 1024, 6);
  const order: string[] = [];
  fake.on("client:get_blob", async (req) => {
    const h = req.blob_handle as string;
    order.push(
      `${h}:${req.blob_format === "binary" ? "bin" : "b64"}:${String(req.max_chunk_bytes)}`,
    );
    await new Promise((r) => setTimeout(r, 2)); // a path that is not instant
    return answerFor(h.startsWith("fa") ? a : b, req);
  });
  for (const [binaryB, label] of [
    [true, "binary + binary"],
    [false, "binary + base64"],
  ] as const) {
    order.length = 0;
    const [ra, rb] = await Promise.all([
      readBlobWithInfo(agent, COMPUTER, "fa", { chunkBytes: 8192, window: 32 }),
      readBlobWithInfo(agent, COMPUTER, "fb", { chunkBytes: 8192, window: 32, binary: binaryB }),
    ]);
    assert.deepEqual(ra.value, a);
    assert.deepEqual(rb.value, b);
    // Until one of them has asked its last chunk, each asked the same cost of the link, give or
    // take a chunk or two (the later one catches up after its first answer).
    const cost = { fa: 0, fb: 0 };
    const lastA = order.findLastIndex((o) => o.startsWith("fa"));
    const lastB = order.findLastIndex((o) => o.startsWith("fb"));
    for (const o of order.slice(0, Math.min(lastA, lastB) + 1)) {
      const [h, carriage, len] = o.split(":") as ["fa" | "fb", string, string];
      cost[h] += Number(len) * (carriage === "bin" ? 1 : 4 / 3);
    }
    const worst = Math.abs(cost.fa - cost.fb);
    assert.ok(worst <= 2 * 8192 * (4 / 3), `${label}: shares apart by up to ${worst} bytes`);
  }
});

void test("on loopback a fresh path leaves the least chunk and reaches the ceiling", async () => {
  const bytes = testBytes(16 * 1024 * 1024, 7);
  const fresh = await connectAgent(fake, { name: "agent-fresh" });
  try {
    fake.on("client:get_blob", (req) => answerFor(bytes, req, { cap: 1 << 20 }));
    const n = fake.blobRequests().length;
    const { value } = await readBlobWithInfo(fresh, COMPUTER, "ramp");
    assert.equal(value.length, bytes.length);
    const sizes = fake
      .blobRequests()
      .slice(n)
      .map((r) => r.max_chunk_bytes as number);
    // The trap this guards against is two chunks of the least size for good. How soon the ceiling
    // comes is the machine's: on an idle one within the first fifth of the file, beside four busy
    // loops after up to two thirds (the one process's wait for the CPU is a real one, which the
    // pull reads as queue), so the bound is the last fifth; the speed is the bench's.
    const first = sizes.indexOf(DEFAULT_BINARY_CHUNK_BYTES);
    const ramp = sizes.slice(0, Math.max(0, first)).reduce((a, b) => a + b, 0);
    assert.ok(
      first >= 0 && ramp <= 0.8 * bytes.length,
      `ceiling first asked at request ${first}, after ${ramp} bytes: ${sizes.join(" ")}`,
    );
  } finally {
    await fresh.close();
  }
});
