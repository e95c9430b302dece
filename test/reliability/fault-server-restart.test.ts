/**
 * Faults: the Server process is SIGKILLed mid-download and started again on the same
 * port. The Computer and the Agent reconnect by themselves, rejoin their office, and the download
 * finishes verified with the handle minted before the crash.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { writeRandomFile } from "../support/agent-stack.ts";
import { spawnServer, type Proc } from "../support/reliability-procs.ts";
import { watchProcess, writeSkill } from "../support/reliability-stack.ts";

const SIZE = 6_000_000;
const TOKEN = "restart-token-0123456789";
const OFFICE = "restart-office";
let dir: string;
let server: { proc: Proc; url: string };
let pc: RunningComputer;
let agent: AgentClient;
let sha: string;
const watch = watchProcess();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-srv-"));
  const root = await writeSkill(join(dir, "home"), "data", {});
  sha = await writeRandomFile(join(root, "big.bin"), SIZE);
  server = await spawnServer(0, { A2C_TOKENS: TOKEN, A2C_LOG_LEVEL: "error" });
  pc = await startComputer({
    server: server.url,
    office: OFFICE,
    name: "pc",
    token: TOKEN,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    workers: 0,
    startTimeoutMs: 30_000,
  });
  agent = new AgentClient({
    url: server.url,
    token: TOKEN,
    name: "agent-r",
    reconnectionDelayMs: 100,
    reconnectionDelayMaxMs: 500,
  });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  await agent.waitForComputer("pc", { timeoutMs: 30_000 });
});
after(async () => {
  watch.stop();
  await agent?.close();
  await pc?.close();
  await server?.proc.kill();
  await rm(dir, { recursive: true, force: true });
});

void test("Server SIGKILLed and restarted on the same port mid-download: verified", async () => {
  const ret = await agent.getSkill("pc", "data", "big.bin");
  assert.ok(ret.blob_handle);
  const port = new URL(server.url).port;
  let crashed = false;
  let restarted: Promise<void> | undefined;
  const reconnected = new Promise<void>((r) => agent.once("reconnected", () => r()));
  const info = await agent.downloadBlob("pc", ret.blob_handle, join(dir, "out.bin"), {
    window: 4,
    chunkBytes: 64 * 1024,
    expectedSha256: sha,
    resumeTimeoutMs: 120_000,
    onProgress: (p) => {
      if (crashed || p.bytes < SIZE * 0.3) return;
      crashed = true;
      restarted = server.proc.kill("SIGKILL").then(async () => {
        server = await spawnServer(Number(port), { A2C_TOKENS: TOKEN, A2C_LOG_LEVEL: "error" });
      });
    },
  });
  await restarted;
  await reconnected;
  assert.ok(crashed, "the Server was killed mid-download");
  const got = await readFile(join(dir, "out.bin"));
  assert.equal(createHash("sha256").update(got).digest("hex"), sha);
  assert.equal(info.sha256, sha);
  assert.ok(info.stats.resumes >= 1, "the pull resumed");
  assert.ok(pc.joined, "the Computer rejoined its office");
  assert.deepEqual(watch.problems, []);
});
