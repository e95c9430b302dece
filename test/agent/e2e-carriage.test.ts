/**
 * Carriage against the real Server and Computer: the SDK's defaults get binary carriage (our
 * Computer honours D19 and echoes `blob_format`), `binary: false` gets the spec's base64; either
 * way the bytes in memory and on disk are the file's, by sha256.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const SIZE = 3 * 1024 * 1024 + 777;
let stack: AgentStack;
let computer: RunningComputer;
let agent: AgentClient;
let expected: string;

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "big", "a big file");
  expected = await writeRandomFile(join(root, "data.bin"), SIZE);
  computer = await inProcessComputer(stack, "pc");
  agent = new AgentClient({ url: stack.url, token: stack.token });
  await agent.connect();
  await agent.joinOffice(stack.office);
});
after(async () => {
  await agent?.close();
  await computer?.close();
  await stack?.close();
});

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

async function handle(): Promise<string> {
  return (await agent.getSkillRaw("pc", "big", "data.bin")).blob_handle!;
}

void test("defaults: binary carriage, the file's bytes", async () => {
  const { value, info } = await readBlobWithInfo(agent, "pc", await handle());
  assert.equal(info.carriage, "binary");
  assert.equal(sha256(value), expected);
});

void test("binary: false: base64 carriage, the file's bytes", async () => {
  const { value, info } = await readBlobWithInfo(agent, "pc", await handle(), { binary: false });
  assert.equal(info.carriage, "base64");
  assert.equal(sha256(value), expected);
});

void test("downloadBlob, both carriages: the file on disk is the source", async () => {
  for (const binary of [true, false]) {
    const out = join(stack.dir, `out-${String(binary)}.bin`);
    const info = await agent.downloadBlob("pc", await handle(), out, { binary });
    assert.equal(info.carriage, binary ? "binary" : "base64");
    assert.equal(sha256(await readFile(out)), expected);
  }
});
