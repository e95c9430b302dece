/**
 * End to end: the Computer process is killed (SIGKILL) mid-download and started again. The Agent
 * waits for it to re-enter the office, resumes from the bytes it already holds, and ends with a
 * verified file; no byte is pulled twice beyond the chunks that were in flight.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import {
  exited,
  spawnComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const SIZE = 24 * 1024 * 1024;
const CHUNK = 64 * 1024;
const WINDOW = 8;
let stack: AgentStack;
let agent: AgentClient;
let child: ChildProcess | undefined;
let expected: Buffer;

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "data", "Data skill.\n");
  await writeRandomFile(join(root, "assets", "data.bin"), SIZE);
  expected = await readFile(join(root, "assets", "data.bin"));
  agent = new AgentClient({ url: stack.url, token: stack.token, name: "agent-restart" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  const joined = new Promise<void>((r) => agent.once("computer_joined", () => r()));
  child = spawnComputer(stack, "pc");
  await joined;
});
after(async () => {
  child?.kill("SIGKILL");
  if (child) await exited(child);
  await agent?.close();
  await stack?.close();
});

void test("kill -9 and restart the Computer mid-download: verified file, nothing pulled twice", async () => {
  const ret = await agent.getSkill("pc", "data", "assets/data.bin");
  assert.ok(ret.blob_handle);
  let killed = false;
  let restarted: Promise<void> | undefined;
  const out = join(stack.dir, "data.out");
  const info = await agent.downloadBlob("pc", ret.blob_handle, out, {
    window: WINDOW,
    chunkBytes: CHUNK,
    expectedSha256: ret.sha256,
    expectedSize: ret.total_size,
    onProgress: (p) => {
      if (!killed && p.bytes >= SIZE * 0.4) {
        killed = true;
        const victim = child!;
        victim.kill("SIGKILL");
        // Restart with the same name and state dir (the handle key survives, D14).
        restarted = exited(victim).then(() => {
          child = spawnComputer(stack, "pc");
        });
      }
    },
  });
  await restarted;
  assert.ok(killed, "the Computer was killed mid-download");
  const got = await readFile(out);
  assert.equal(got.length, SIZE);
  assert.ok(got.equals(expected), "the file is the original content");
  assert.equal(info.sha256, createHash("sha256").update(expected).digest("hex"));
  assert.ok(info.stats.resumes >= 1, "the read resumed");
  assert.equal(info.stats.restarts, 0, "never restarted from offset 0");
  const extra = info.stats.bytesReceived - SIZE;
  assert.ok(
    extra <= WINDOW * CHUNK,
    `bytes pulled twice (${extra}) stay within the chunks in flight (${WINDOW * CHUNK})`,
  );
});
