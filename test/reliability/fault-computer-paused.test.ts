/**
 * Faults: a Computer that stops answering (its process SIGSTOPped) makes the Server
 * answer 408 after its relay timeout (D10; short here), the Agent sees the typed 408, and a
 * download started while it is paused resumes and finishes verified once it is SIGCONTed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { RelayTimeoutError } from "../../agent/errors.ts";
import { writeRandomFile } from "../support/agent-stack.ts";
import { spawnComputerProc, type Proc } from "../support/reliability-procs.ts";
import { writeSkill } from "../support/reliability-stack.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

const SIZE = 2_000_000;
const OFFICE = "pause-office";
let dir: string;
let h: ServerHarness;
let pc: Proc;
let agent: AgentClient;
let sha: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-pause-"));
  const root = await writeSkill(join(dir, "home"), "data", {});
  sha = await writeRandomFile(join(root, "big.bin"), SIZE);
  h = await ServerHarness.start({ relayTimeoutMs: 1_000 });
  pc = await spawnComputerProc({
    url: h.url,
    office: OFFICE,
    name: "pc",
    token: TEST_TOKEN,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    env: { A2C_LOG_LEVEL: "error" },
  });
  agent = new AgentClient({ url: h.url, token: TEST_TOKEN, name: "agent-p" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  await agent.waitForComputer("pc", { timeoutMs: 60_000 });
});
after(async () => {
  pc?.child.kill("SIGCONT");
  await pc?.kill();
  await agent?.close();
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

void test("paused Computer: 408, then the download resumes after SIGCONT and verifies", async () => {
  const ret = await agent.getSkill("pc", "data", "big.bin");
  assert.ok(ret.blob_handle);
  const handle = ret.blob_handle;
  pc.child.kill("SIGSTOP");
  await assert.rejects(
    agent.getBlobChunk("pc", handle, { offset: 0, maxChunkBytes: 65_536, binary: false }),
    (err: unknown) => err instanceof RelayTimeoutError && err.code === 408,
  );
  // A download started while paused: its first chunks time out (408); it resumes on SIGCONT.
  const download = agent.downloadBlob("pc", handle, join(dir, "out.bin"), {
    window: 4,
    chunkBytes: 64 * 1024,
    expectedSha256: sha,
    resumeTimeoutMs: 60_000,
  });
  // The Server's own 408 proves the pause was seen; continue only after one more relay timeout.
  await assert.rejects(
    agent.getBlobChunk("pc", handle, { offset: 0, maxChunkBytes: 65_536, binary: false }),
    RelayTimeoutError,
  );
  pc.child.kill("SIGCONT");
  const info = await download;
  const got = await readFile(join(dir, "out.bin"));
  assert.equal(createHash("sha256").update(got).digest("hex"), sha);
  assert.equal(info.sha256, sha);
});
