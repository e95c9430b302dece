/**
 * A pull puts one abort listener on the caller's signal, whatever its window: at window 16 and
 * 64 the signal never holds more than one during the pull and none afterwards (so Node never
 * prints `MaxListenersExceededWarning`), and aborting it mid-pull still stops the pull with the
 * caller's reason. Real Server and Computer, a real file pulled in 4 KiB chunks.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const SIZE = 1024 * 1024; // 256 chunks of 4 KiB: every window below is full for most of the pull

let stack: AgentStack;
let computer: RunningComputer;
let agent: AgentClient;
let handle: string;
const warnings: string[] = [];
const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);

before(async () => {
  process.on("warning", onWarning);
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "big", "a big file");
  await writeRandomFile(join(root, "data.bin"), SIZE);
  computer = await inProcessComputer(stack, "pc");
  agent = new AgentClient({ url: stack.url, token: stack.token });
  await agent.connect();
  await agent.joinOffice(stack.office);
  handle = (await agent.getSkillRaw("pc", "big", "data.bin")).blob_handle!;
});
after(async () => {
  process.off("warning", onWarning);
  await agent?.close();
  await computer?.close();
  await stack?.close();
});

const listeners = (signal: AbortSignal): number => getEventListeners(signal, "abort").length;

for (const window of [16, 64]) {
  void test(`window ${window}: one listener on the caller's signal during the pull, none after`, async () => {
    const caller = new AbortController();
    let most = 0;
    let samples = 0;
    const bytes = await agent.readBlob("pc", handle, {
      window,
      chunkBytes: 4096,
      signal: caller.signal,
      onProgress: () => {
        samples++;
        most = Math.max(most, listeners(caller.signal));
      },
    });
    assert.equal(bytes.length, SIZE);
    assert.ok(samples >= SIZE / 4096, "progress was sampled at every chunk");
    assert.equal(most, 1, "one abort listener per pull");
    assert.equal(listeners(caller.signal), 0, "the listener is removed when the pull ends");
    assert.deepEqual(warnings, []);
  });
}

void test("aborting the caller's signal mid-pull stops it with the caller's reason", async () => {
  const caller = new AbortController();
  const reason = new Error("stop here");
  const pull = agent.readBlob("pc", handle, {
    window: 64,
    chunkBytes: 4096,
    signal: caller.signal,
    onProgress: (p) => {
      if (p.bytes >= SIZE / 4) caller.abort(reason);
    },
  });
  await assert.rejects(pull, (err) => err === reason);
  assert.equal(listeners(caller.signal), 0);
  // The client is still usable: nothing of the aborted pull is left waiting on it.
  assert.equal((await agent.readBlob("pc", handle, { window: 64 })).length, SIZE);
  assert.deepEqual(warnings, []);
});
