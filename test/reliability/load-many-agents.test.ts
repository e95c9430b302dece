/**
 * Load: 64 Agents (one per office, each with its own Computer) pull at once through
 * one Server; every download is verified.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { writeRandomFile } from "../support/agent-stack.ts";
import { watchProcess, writeSkill } from "../support/reliability-stack.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

const AGENTS = 64;
const SIZE = 300_000;
let dir: string;
let h: ServerHarness;
let sha: string;
const pcs: RunningComputer[] = [];
const agents: AgentClient[] = [];
const watch = watchProcess();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-many-"));
  const root = await writeSkill(join(dir, "home"), "data", {});
  sha = await writeRandomFile(join(root, "f.bin"), SIZE);
  h = await ServerHarness.start();
  // Started 16 at a time (sequential start-up dominates the test's time on a loaded machine).
  const one = async (i: number): Promise<void> => {
    pcs.push(
      await startComputer({
        server: h.url,
        office: `office-${i}`,
        name: "pc",
        token: TEST_TOKEN,
        skills: join(dir, "home"),
        stateDir: join(dir, `state-${i}`),
        workers: 0,
        startTimeoutMs: 60_000,
      }),
    );
    const agent = new AgentClient({ url: h.url, token: TEST_TOKEN, name: `agent-${i}` });
    agents.push(agent);
    await agent.connect();
    await agent.joinOffice(`office-${i}`);
  };
  for (let i = 0; i < AGENTS; i += 16)
    await Promise.all(Array.from({ length: 16 }, (_, k) => one(i + k)));
});
after(async () => {
  watch.stop();
  await Promise.all(agents.map((a) => a.close()));
  await Promise.all(pcs.map((p) => p.close()));
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

void test("64 Agents pulling at once: all verified", async () => {
  const results = await Promise.all(
    agents.map(async (agent) => {
      const ret = await agent.getSkill("pc", "data", "f.bin");
      assert.ok(ret.blob_handle);
      const { value, info } = await readBlobWithInfo(agent, "pc", ret.blob_handle, {
        expectedSha256: sha,
      });
      return { data: value, info };
    }),
  );
  for (const { data, info } of results) {
    assert.equal(createHash("sha256").update(data).digest("hex"), sha);
    assert.equal(info.sha256, sha);
  }
  assert.equal(results.length, AGENTS);
  assert.deepEqual(watch.problems, []);
});
