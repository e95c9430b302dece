/**
 * Killing a Server node (SIGKILL of its process: no leave, no deregistration) while an Agent on
 * node A has requests in flight to a Computer on node B:
 * - the Agent gets its errors at once (404 `disconnected`, not a 408 after the relay timeout):
 *   node A notices B's death through Redis and fails its in-flight requests to B's Computers;
 * - the office hears the Computer leave;
 * - the Computer reconnects (through a failover balancer) to node A and gets its name back at once;
 * - the download, resumed by the Agent SDK, finishes with the right sha256.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient, ComputerNotFoundError } from "../../agent/index.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import {
  FailoverProxy,
  TOKEN,
  computer,
  removeHome,
  skillHome,
  spawnNode,
  startNode,
  type NodeProcess,
  type SkillHome,
  type TestNode,
} from "./cluster-harness.ts";

const OFFICE = "office-crash";
const PREFIX = "crash";
let redis: RedisInstance;
let a: TestNode;
let b: NodeProcess;
let proxy: FailoverProxy;
let home: SkillHome;
let pc: RunningComputer;
let agent: AgentClient;

before(async () => {
  redis = await startRedis();
  home = await skillHome(8 * 1024 * 1024);
  [a, b] = await Promise.all([
    startNode(redis.url, { prefix: PREFIX }),
    spawnNode(redis.url, PREFIX),
  ]);
  // The Computer only knows the balancer: B first, A when B refuses connections.
  proxy = new FailoverProxy([b.url, a.url]);
  await proxy.listen();
  pc = await computer(proxy.url, OFFICE, "pc", home);
  agent = new AgentClient({ url: a.url, token: TOKEN, name: "agent-a" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
});

after(async () => {
  await agent?.close();
  await pc?.close();
  await proxy?.close();
  await b?.kill();
  await a?.close();
  await redis?.stop();
  if (home) await removeHome(home);
});

async function nodeOfPc(): Promise<string | undefined> {
  const found = await a.registry.findComputer(OFFICE, "pc");
  return found?.nodeId;
}

void test("SIGKILL of node B mid-transfer: prompt errors, Computer back on A, download verified", async () => {
  const nodeBefore = await nodeOfPc();
  assert.ok(nodeBefore && nodeBefore !== a.registry.nodeId, "the Computer starts on node B");

  const skill = await agent.getSkillRaw("pc", "big", "data.bin");
  const handle = (skill as { blob_handle?: string }).blob_handle;
  assert.equal(typeof handle, "string");

  // A tool call that would run for 8 s: in flight to node B when B dies.
  const slow = agent.callTool("pc", "demo__slow", { ms: 8_000 }, { timeout: 10 });
  const slowOutcome = slow.then(
    () => new Error("the slow call should not have completed"),
    (err: unknown) => err,
  );

  const left = new Promise<string>((resolve) => agent.once("computer_left", resolve));
  const back = new Promise<void>((resolve) => {
    agent.on("computer_joined", (name) => {
      if (name === "pc") resolve();
    });
  });

  const crash: { killed: Promise<void> | null } = { killed: null };
  const out = join(home.dir, "download.bin");
  const info = await agent.downloadBlob("pc", handle!, out, {
    chunkBytes: 64 * 1024,
    window: 4,
    onProgress: (p) => {
      if (!crash.killed && p.bytes >= p.total / 4) crash.killed = b.kill();
    },
  });
  assert.ok(crash.killed, "node B was killed during the download");
  await crash.killed;

  const err = await slowOutcome;
  assert.ok(err instanceof ComputerNotFoundError, `expected 404, got ${String(err)}`);
  assert.deepEqual(err.details, { computer_name: "pc", reason: "disconnected" });

  assert.equal(await left, "pc", "the reaper told the office that the Computer left");
  await back;

  assert.equal(info.sha256, home.sha256);
  assert.equal(info.totalSize, home.size);
  assert.ok(info.stats.resumes >= 1, "the pull resumed after the crash");
  const bytes = await readFile(out);
  assert.equal(createHash("sha256").update(bytes).digest("hex"), home.sha256);

  // The office is whole again, on node A.
  assert.equal(await nodeOfPc(), a.registry.nodeId);
  const sessions = await agent.listRoom();
  assert.deepEqual(
    sessions.map((s) => [s.role, s.name]),
    [
      ["agent", "agent-a"],
      ["computer", "pc"],
    ],
  );
  assert.deepEqual(await a.registry.nodes(), [a.registry.nodeId], "B was reaped");
  const echo = await agent.callTool("pc", "demo__echo", { text: "whole again" }, { timeout: 3 });
  assert.deepEqual(echo.content, [{ type: "text", text: "whole again" }]);
  assert.equal(a.server.inflight(), 0);
});
