/**
 * Hash work is fair (D59), through the real Server and a Computer with one large-lane hashing
 * thread (the pool size of a 2-core machine) and a raised `maxSize`:
 * - while a 256 GiB file (sparse: reading it costs only sha256's CPU) holds that thread, 2 MiB
 *   mints are hashed on the small lane without waiting for a thread (the lane's own wait
 *   histogram), and answered long before the Server's relay timeout (before, they waited behind
 *   the huge hash until it, 408); their latency is reported, and bounded loosely, since what
 *   else the machine runs moves it;
 * - the large lane's queue is bounded: with its thread busy and 16 jobs waiting, one more huge
 *   mint is answered `busy` at once and counted; a pull that needs a hash the lane cannot queue
 *   is answered the same (the blob engine, with a lane that queues nothing).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient, ProtocolError } from "../../agent/index.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { createComputerMetrics } from "../../computer/metrics.ts";
import { createHashPool, DEFAULT_LARGE_QUEUE } from "../../computer/workers/pool.ts";
import { busy } from "../../protocol/index.ts";
import { startAgentStack, writeSkill, type AgentStack } from "../support/agent-stack.ts";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const HUGE = 256 * 1024 ** 3;
const SMALL = 2 * 1024 * 1024;
const SMALL_FILES = 5;
/** Every 2 MiB hash job waits less than this for the small lane's thread (a histogram bucket). */
const SMALL_WAIT_BOUND_S = 2;
/** A 2 MiB mint is answered within this, however loaded the machine (the relay's is 30 s). */
const SMALL_MINT_BOUND_MS = 10_000;

let stack: AgentStack;
let pc: RunningComputer;
let agent: AgentClient;
const pending: Promise<unknown>[] = [];

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "lanes", "huge and small files");
  for (let i = 0; i <= DEFAULT_LARGE_QUEUE + 1; i++) {
    await writeFile(join(root, `huge-${i}.bin`), "");
    await truncate(join(root, `huge-${i}.bin`), HUGE);
  }
  for (let i = 0; i <= SMALL_FILES; i++) {
    await writeFile(join(root, `small-${i}.bin`), randomBytes(SMALL));
  }
  pc = await startComputer({
    server: stack.url,
    office: stack.office,
    name: "pc",
    token: stack.token,
    skills: stack.home,
    stateDir: join(stack.dir, "state"),
    workers: 1,
    maxSize: 2 * HUGE,
    startTimeoutMs: 30_000,
  });
  agent = new AgentClient({ url: stack.url, token: stack.token, name: "boss" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  await agent.waitForComputer("pc", { timeoutMs: 10_000 });
});

after(async () => {
  await agent?.close();
  await pc?.close(); // ends the hashes still running
  await Promise.allSettled(pending);
  await stack?.close();
});

/** A mint of `file` of the `lanes` skill, not awaited by the test (it ends with the Computer). */
function mintLater(file: string): Promise<unknown> {
  const p = agent.getSkillRaw("pc", "lanes", file);
  p.catch(() => undefined);
  pending.push(p);
  return p;
}

async function laneMetric(name: "hashQueued" | "hashRefusals", lane: string): Promise<number> {
  const m = await pc.metrics[name].get();
  return m.values.find((v) => v.labels.lane === lane)?.value ?? 0;
}

async function until(what: string, cond: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    // The metric is the only view of the pool's queue; polled, not slept on.
    await new Promise((r) => setTimeout(r, 20));
  }
}

void test("2 MiB mints are answered at their usual latency while a 256 GiB file hashes", async () => {
  let hugeDone = false;
  const settled = (): void => void (hugeDone = true);
  void mintLater("huge-0.bin").then(settled, settled);
  const times: number[] = [];
  for (let i = 0; i < SMALL_FILES; i++) {
    const t0 = performance.now();
    const got = (await agent.getSkillRaw("pc", "lanes", `small-${i}.bin`)) as {
      total_size?: number;
      blob_handle?: string;
    };
    times.push(performance.now() - t0);
    assert.equal(got.total_size, SMALL);
    assert.equal(typeof got.blob_handle, "string");
  }
  process.stdout.write(
    `bound: 2 MiB mints during a huge hash: ${times.map((t) => Math.round(t)).join(", ")} ms ` +
      `(bound ${SMALL_MINT_BOUND_MS} ms)\n`,
  );
  assert.equal(hugeDone, false, "the huge hash is still running");
  for (const t of times) assert.ok(t < SMALL_MINT_BOUND_MS, `a small mint took ${t} ms`);
  const waits = (await pc.metrics.hashWaitSeconds.get()).values;
  const small = (suffix: string, le?: number): number | undefined =>
    waits.find(
      (v) =>
        v.labels.lane === "small" &&
        v.metricName?.endsWith(suffix) &&
        (le === undefined || (v.labels as { le?: number }).le === le),
    )?.value;
  assert.equal(small("_count"), SMALL_FILES, "every 2 MiB file was hashed on the small lane");
  assert.equal(
    small("_bucket", SMALL_WAIT_BOUND_S),
    SMALL_FILES,
    `every one waited less than ${SMALL_WAIT_BOUND_S} s for a thread (sum ${small("_sum")} s)`,
  );
});

void test("with the large lane's thread busy and its queue full, one more huge mint is busy at once", async () => {
  for (let i = 1; i <= DEFAULT_LARGE_QUEUE; i++) void mintLater(`huge-${i}.bin`);
  await until(
    "the large lane's queue to fill",
    async () => (await laneMetric("hashQueued", "large")) === DEFAULT_LARGE_QUEUE,
  );
  const t0 = performance.now();
  await assert.rejects(
    agent.getSkillRaw("pc", "lanes", `huge-${DEFAULT_LARGE_QUEUE + 1}.bin`),
    (err: unknown) => {
      assert.ok(err instanceof ProtocolError);
      assert.equal(err.code, 500);
      assert.equal(err.reason, "busy");
      return true;
    },
  );
  const ms = performance.now() - t0;
  process.stdout.write(`bound: refused busy in ${Math.round(ms)} ms\n`);
  assert.ok(ms < 1_000);
  assert.equal(await laneMetric("hashRefusals", "large"), 1);
  // The small lane is untouched by all this (a file not hashed before).
  const got = (await agent.getSkillRaw("pc", "lanes", `small-${SMALL_FILES}.bin`)) as {
    total_size?: number;
  };
  assert.equal(got.total_size, SMALL);
});

void test("a pull whose hash its lane cannot queue is answered busy at once", async () => {
  const metrics = createComputerMetrics("pc-1");
  const pool = createHashPool(1, {
    largeQueue: 0,
    metrics: {
      queued: metrics.hashQueued,
      waitSeconds: metrics.hashWaitSeconds,
      refusals: metrics.hashRefusals,
    },
  })!;
  const f = engineFixture({ pool, metrics });
  try {
    const files = [0, 1].map((i) => join(f.dir, `huge-${i}.bin`));
    for (const file of files) {
      await writeFile(file, "");
      await truncate(file, HUGE);
    }
    const first = f.engine.getBlob(blobReq(f.fileHandle(files[0]!)));
    first.catch(() => undefined);
    await until("the large lane's thread to take the first hash", async () => {
      const waits = (await f.metrics.hashWaitSeconds.get()).values;
      return waits.some((v) => v.labels.lane === "large" && v.metricName?.endsWith("_count"));
    });
    const t0 = performance.now();
    const second = await f.engine.getBlob(blobReq(f.fileHandle(files[1]!)));
    assert.deepEqual(
      second,
      busy("Too many files waiting to be hashed (large files); retry later"),
    );
    assert.ok(performance.now() - t0 < 1_000);
  } finally {
    await pool.close();
    await f.engine.close();
    f.close();
  }
});
