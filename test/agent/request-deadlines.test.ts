/**
 * Requests share timers and abort listeners (agent/transport.ts) without losing their own
 * bounds: each request still fails at its own deadline, requests with different timeouts do not
 * wait for each other, a shared signal holds one listener while requests are pending and none
 * after, and aborting it fails exactly the requests it governs. A request waiting for its ack does
 * not hold its payload (an upload chunk) once it is sent.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AgentClient } from "../../agent/client.ts";
import { RequestTimeoutError } from "../../agent/errors.ts";
import { COMPUTER, NO_ANSWER, useFakeComputer } from "../support/agent-fake-computer.ts";

let agent: AgentClient;
/** Releases the `client:put_blob` answer the fake Computer holds. */
let answerPut: () => void = () => undefined;
let putArrived: () => void = () => undefined;
useFakeComputer((fake, a) => {
  agent = a;
  fake.on("client:put_blob", async (req) => {
    putArrived();
    await new Promise<void>((resolve) => (answerPut = resolve));
    return { upload_id: "ab".repeat(16), chunk_offset: req.chunk_offset };
  });
  fake.on("client:get_tools", () => NO_ANSWER);
  fake.on("client:get_skills", () => ({ req_id: "x", skills: [] }));
});

/** Resolves with the elapsed ms when `p` rejects with a RequestTimeoutError. */
async function timeoutAfter(p: Promise<unknown>, t0: number): Promise<number> {
  await assert.rejects(p, RequestTimeoutError);
  return performance.now() - t0;
}

void test("each request fails at its own deadline, in the order sent", async () => {
  const t0 = performance.now();
  const first = timeoutAfter(agent.getTools(COMPUTER, { timeoutMs: 150 }), t0);
  await new Promise((r) => setTimeout(r, 60));
  const second = timeoutAfter(agent.getTools(COMPUTER, { timeoutMs: 150 }), t0);
  const [a, b] = await Promise.all([first, second]);
  assert.ok(a >= 149, `first after ${a.toFixed(0)} ms`);
  assert.ok(b >= 60 + 149, `second after ${b.toFixed(0)} ms`);
  assert.ok(b > a);
});

void test("a short timeout is not held up by a longer one sent before it", async () => {
  const t0 = performance.now();
  const long = timeoutAfter(agent.getTools(COMPUTER, { timeoutMs: 600 }), t0);
  const short = await timeoutAfter(agent.getTools(COMPUTER, { timeoutMs: 100 }), t0);
  assert.ok(short >= 99 && short < 550, `short after ${short.toFixed(0)} ms`);
  assert.ok((await long) >= 599);
});

void test("a shared signal: one listener while pending, none after; abort fails its requests only", async () => {
  const shared = new AbortController();
  const reason = new Error("stop these");
  const governed = [1, 2, 3].map(() => agent.getTools(COMPUTER, { signal: shared.signal }));
  const other = agent.getTools(COMPUTER, { timeoutMs: 300 });
  assert.equal(getEventListeners(shared.signal, "abort").length, 1);
  shared.abort(reason);
  for (const p of governed) await assert.rejects(p, (err) => err === reason);
  assert.equal(getEventListeners(shared.signal, "abort").length, 0);
  await assert.rejects(other, RequestTimeoutError);

  const reused = new AbortController();
  assert.deepEqual(await agent.getSkills(COMPUTER, { signal: reused.signal }), []);
  assert.equal(getEventListeners(reused.signal, "abort").length, 0, "removed once answered");
});

void test("a request waiting for its ack does not hold its payload once sent", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const arrived = new Promise<void>((resolve) => (putArrived = resolve));
  let blob: WeakRef<Buffer> | undefined;
  const answer = (() => {
    const bytes = Buffer.alloc(256 * 1024, 1);
    blob = new WeakRef(bytes);
    return agent.putBlobChunk(COMPUTER, { offset: 0, eof: false, blob: bytes });
  })();
  await arrived;
  // Written and received: only a reference kept for the round trip could hold the chunk now.
  for (let i = 0; i < 3 && blob?.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  assert.equal(blob?.deref(), undefined, "the chunk is still held while its ack is awaited");
  answerPut();
  assert.equal((await answer).chunkOffset, 0);
});
