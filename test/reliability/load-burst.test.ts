/**
 * Load: one Agent firing 1,000 `client:get_blob` at once gets an answer for every one
 * of them — a chunk, or a clear `busy` (the Server's per-Agent in-flight cap or unread bound, the Computer's read
 * queue) — while the heap stays bounded and everything still answers afterwards.
 *
 * The Computer does not read its socket while the burst arrives (its TCP socket is paused): in
 * one process a Computer that kept reading would serve the burst as fast as it comes and no cap
 * would be reached. Stalled, it lets the Server's cap answer the excess, and on resuming it finds the
 * admitted requests at once, past its own read queue.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Events, isErrorPayload } from "../../protocol/index.ts";
import {
  ask,
  heapAfterGc,
  hygieneViolations,
  REL_OFFICE,
  seenErrors,
  startRelStack,
  watchProcess,
  type RelStack,
} from "../support/reliability-stack.ts";
import { TEST_TOKEN, clientTcp, type Socket } from "../support/server-harness.ts";
import { upgraded } from "../computer/support/harness-computer.ts";

const BURST = 1_000;
const HEAP_BOUND = 64 * 1024 * 1024;
let stack: RelStack;
let agent: Socket;
let handle: string;
const watch = watchProcess();

before(async () => {
  stack = await startRelStack({
    skills: { alpha: { "data.bin": Buffer.alloc(1_000_000, 3) } },
    blob: { maxInFlight: 8, maxQueue: 64 },
  });
  agent = await stack.harness.agent(REL_OFFICE, "agent-burst");
  const ret = (await ask(agent, Events.GetSkill, {
    agent: "agent-burst",
    req_id: "mint",
    computer: "pc",
    name: "alpha",
    rel_path: "data.bin",
  })) as { blob_handle?: string };
  assert.ok(ret.blob_handle);
  handle = ret.blob_handle;
});
after(async () => {
  watch.stop();
  await stack?.close();
});

void test("1,000 get_blob at once: every one answered (chunk or busy), heap bounded", async (t) => {
  const heapStart = heapAfterGc();
  await upgraded(stack.computer);
  const tcp = clientTcp(stack.computer.socket);
  tcp.pause();
  // Resumed once the Server holds everything it admitted and has answered the rest: then every
  // request is either answered or in flight.
  let answered = 0;
  const onAnswer = (): void => {
    answered++;
    if (answered + stack.harness.server.inflight() === BURST && tcp.isPaused()) tcp.resume();
  };
  const answers = await Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      ask(agent, Events.GetBlob, {
        agent: "agent-burst",
        req_id: `burst-${i}`,
        computer: "pc",
        blob_handle: handle,
        chunk_offset: (i * 65_536) % 983_040,
        max_chunk_bytes: 65_536,
      }).then((a) => {
        onAnswer();
        return a;
      }),
    ),
  );
  const tally = { chunks: 0, busy: 0 };
  for (const a of answers) {
    if (isErrorPayload(a)) {
      assert.equal(a.code, 500, JSON.stringify(a));
      // Busy from the in-flight cap or the unread bound (the Server's bounds name theirs), or
      // from the Computer's own read queue (no limit).
      const { reason, limit } = a.details as { reason?: unknown; limit?: unknown };
      assert.equal(reason, "busy", "excess is a clear busy");
      const known = [undefined, "requests_in_flight", "unread_bytes"];
      assert.ok(known.includes(limit as string | undefined), JSON.stringify(a.details));
      tally.busy++;
    } else {
      assert.equal(typeof (a as { blob?: unknown }).blob, "string");
      tally.chunks++;
    }
  }
  t.diagnostic(JSON.stringify(tally));
  assert.equal(tally.chunks + tally.busy, BURST);
  assert.ok(tally.busy > 0, "the caps answered the excess");
  assert.ok(tally.chunks >= 64, "and the admitted ones were served");
  const growth = heapAfterGc() - heapStart;
  assert.ok(growth < HEAP_BOUND, `heap grew ${(growth / 1e6).toFixed(1)} MB`);
  // Healthy afterwards.
  const again = await ask(agent, Events.GetBlob, {
    agent: "agent-burst",
    req_id: "after",
    computer: "pc",
    blob_handle: handle,
  });
  assert.ok(!isErrorPayload(again), "a request after the burst is served");
  assert.equal(stack.harness.server.inflight(), 0, "nothing left in flight");
  assert.deepEqual(watch.problems, []);
  assert.deepEqual(hygieneViolations(seenErrors, [TEST_TOKEN, stack.dir]), []);
});
