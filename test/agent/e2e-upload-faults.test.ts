/**
 * Uploads meeting real faults: a Server that holds little for a Computer refuses chunks `busy`
 * (the upload rewinds within its session and ends with the file's bytes), and a Computer process
 * killed (SIGKILL) mid-upload and started again (the upload waits for it, starts again from 0
 * with a new session, and ends verified; the killed session never becomes a stored file).
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { testBytes } from "../support/agent-fake-computer.ts";
import {
  exited,
  inProcessComputer,
  spawnComputer,
  startAgentStack,
  writeRandomFile,
  type AgentStack,
} from "../support/agent-stack.ts";

let stack: AgentStack;
let agent: AgentClient;
let child: ChildProcess | undefined;
const land = (name: string): string => join(stack.dir, `land-${name}`);

before(async () => {
  stack = await startAgentStack();
  agent = new AgentClient({ url: stack.url, token: stack.token });
  await agent.connect();
  await agent.joinOffice(stack.office);
});
after(async () => {
  child?.kill("SIGKILL");
  if (child) await exited(child);
  await agent?.close();
  await stack?.close();
});

void test("chunks the Server refuses busy are sent again within the session", async () => {
  // 20 KiB of upload chunks in flight to one Computer at most: a second chunk of 16 KiB or more
  // in flight is refused.
  const bounded = await startAgentStack(undefined, { maxUnreadBytes: 20 * 1024 });
  let pc: RunningComputer | undefined;
  const client = new AgentClient({ url: bounded.url, token: bounded.token });
  try {
    pc = await inProcessComputer(bounded, "pc", { landingRoot: join(bounded.dir, "land") });
    await client.connect();
    await client.joinOffice(bounded.office);
    await client.waitForComputer("pc", { timeoutMs: 30_000 });
    const data = testBytes(1024 * 1024, 21);
    const r = await client.uploadBlob("pc", data, { nameHint: "bounded.bin" });
    assert.ok(readFileSync(r.landingPath).equals(data));
    assert.ok(r.stats.rewinds >= 1 && r.stats.busy >= 1, JSON.stringify(r.stats));
    assert.equal(r.stats.restarts, 0, "one session");
  } finally {
    await client.close();
    await pc?.close();
    await bounded.close();
  }
});

void test("kill -9 and restart the Computer mid-upload: a new session, a verified file", async () => {
  const args = ["--landing-root", land("proc")];
  const joined = new Promise<void>((r) =>
    agent.on("computer_joined", (c) => void (c === "proc" && r())),
  );
  child = spawnComputer(stack, "proc", args);
  await joined;
  const file = join(stack.dir, "big.bin");
  const want = await writeRandomFile(file, 8 * 1024 * 1024);
  let killed = false;
  let restarted: Promise<void> | undefined;
  const r = await agent.uploadBlob("proc", file, {
    onProgress: (p) => {
      if (killed || p.bytes < 256 * 1024) return;
      killed = true;
      const victim = child!;
      victim.kill("SIGKILL");
      restarted = exited(victim).then(() => {
        child = spawnComputer(stack, "proc", args);
      });
    },
  });
  await restarted;
  assert.ok(killed, "the Computer was killed mid-upload");
  assert.equal(r.sha256, want);
  assert.ok(r.stats.restarts >= 1, JSON.stringify(r.stats));
  const stored = readdirSync(land("proc")).filter((n) => n !== ".a2c-upload");
  assert.deepEqual(stored, [r.landingPath.split("/").pop()], "only the finished upload is stored");
});
