import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { ComputerNotFoundError } from "../../agent/errors.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import {
  COMPUTER,
  NO_ANSWER,
  answerFor,
  useFakeComputer,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;

useFakeComputer(
  (f, a) => {
    fake = f;
    agent = a;
  },
  { agent: { reconnectionDelayMs: 20, reconnectionDelayMaxMs: 50 } },
);

const notFound = {
  code: 404,
  message: `Computer with name '${COMPUTER}' disconnected`,
  details: { computer_name: COMPUTER, reason: "disconnected" },
};

void test("Computer leaves mid-read (404): waits for it to come back, resumes from held bytes", async () => {
  const bytes = testBytes(20_000, 1);
  let gone = false;
  fake.on("client:get_blob", (req) => {
    const off = req.chunk_offset as number;
    if (!gone && off >= 8000) {
      gone = true;
      fake.computerLeaves(COMPUTER);
    }
    if (!fake.computers.has(COMPUTER)) return notFound;
    return answerFor(bytes, req);
  });
  agent.once("computer_left", () => {
    // The Computer restarts a moment later.
    setImmediate(() => fake.computerEnters(COMPUTER));
  });
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "r1", {
    chunkBytes: 1000,
    window: 4,
  });
  assert.deepEqual(value, bytes);
  assert.ok(info.stats.resumes >= 1);
  assert.equal(info.stats.restarts, 0);
  assert.ok(
    info.stats.bytesReceived <= bytes.length + 4 * 1000,
    `no byte pulled twice beyond the window (${info.stats.bytesReceived})`,
  );
  // Every offset answered with bytes was asked once; only failed ones were asked again.
  const asked = fake
    .blobRequests()
    .slice(n)
    .map((r) => r.chunk_offset as number);
  assert.equal(asked.filter((o) => o === 0).length, 1);
});

void test("our own socket drops mid-read: reconnect, rejoin, resume", async () => {
  const bytes = testBytes(12_000, 2);
  let dropped = false;
  fake.on("client:get_blob", (req) => {
    if (!dropped && (req.chunk_offset as number) === 5000) {
      dropped = true;
      fake.dropAgents();
      return NO_ANSWER;
    }
    return answerFor(bytes, req);
  });
  const joinsBefore = fake.received.filter((r) => r.event === "server:join_office").length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "r2", {
    chunkBytes: 1000,
    window: 3,
  });
  assert.deepEqual(value, bytes);
  assert.ok(info.stats.resumes >= 1);
  const joins = fake.received.filter((r) => r.event === "server:join_office").length;
  assert.equal(joins, joinsBefore + 1, "rejoined the office after the reconnect");
  assert.ok(info.stats.bytesReceived <= bytes.length + 3 * 1000);
});

void test("408 from the Server: retried after a backoff", async () => {
  const bytes = testBytes(3000, 3);
  let once = true;
  fake.on("client:get_blob", (req) => {
    if (once && req.chunk_offset === 1000) {
      once = false;
      return { code: 408, message: "slow", details: { computer_name: COMPUTER } };
    }
    return answerFor(bytes, req);
  });
  const got = await agent.readBlob(COMPUTER, "r3", { chunkBytes: 1000 });
  assert.deepEqual(got, bytes);
});

void test("a local ack timeout is retried; the read still completes", async () => {
  const bytes = testBytes(3000, 4);
  let once = true;
  fake.on("client:get_blob", (req) => {
    if (once && req.chunk_offset === 2000) {
      once = false;
      return NO_ANSWER;
    }
    return answerFor(bytes, req);
  });
  const got = await agent.readBlob(COMPUTER, "r4", { chunkBytes: 1000, timeoutMs: 200 });
  assert.deepEqual(got, bytes);
});

void test("a Computer that never comes back: the 404 surfaces after the resume wait", async () => {
  fake.on("client:get_blob", () => notFound);
  fake.computers.delete(COMPUTER);
  try {
    await assert.rejects(
      agent.readBlob(COMPUTER, "r5", { resumeTimeoutMs: 100, retries: 2 }),
      ComputerNotFoundError,
    );
  } finally {
    fake.computers.add(COMPUTER);
  }
});

void test("abort signal stops the read at once with the signal's reason", async () => {
  const bytes = testBytes(5000, 5);
  fake.on("client:get_blob", (req) =>
    (req.chunk_offset as number) >= 2000 ? NO_ANSWER : answerFor(bytes, req),
  );
  const ac = new AbortController();
  const reason = new Error("user stopped");
  const p = agent.readBlob(COMPUTER, "r6", {
    chunkBytes: 1000,
    window: 2,
    signal: ac.signal,
    onProgress: (pr) => {
      if (pr.bytes === 2000) ac.abort(reason);
    },
  });
  await assert.rejects(p, (err) => err === reason);
  await assert.rejects(agent.readBlob(COMPUTER, "r6", { signal: AbortSignal.abort() }), {
    name: "AbortError",
  });
});

void test("the prefix chunk failing while memory is full of later chunks is still re-asked", async () => {
  // File sink with window 2 holds at most 4 completed chunks. Offset 1000 is answered only after
  // four later chunks completed (memory full), and then with a 408: it must be asked again.
  const bytes = testBytes(9000, 6);
  let release: (() => void) | undefined;
  const gate = new Promise<void>((r) => (release = r));
  let answered = 0;
  let failedOnce = false;
  fake.on("client:get_blob", async (req) => {
    const off = req.chunk_offset as number;
    if (off === 1000 && !failedOnce) {
      await gate;
      failedOnce = true;
      return { code: 408, message: "slow", details: { computer_name: COMPUTER } };
    }
    if (off > 1000 && ++answered === 4) setImmediate(() => release!());
    return answerFor(bytes, req);
  });
  const dir = await mkdtemp(join(tmpdir(), "agent-held-"));
  try {
    const path = join(dir, "f.bin");
    await agent.downloadBlob(COMPUTER, "held", path, { chunkBytes: 1000, window: 2 });
    assert.deepEqual(await readFile(path), bytes);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
