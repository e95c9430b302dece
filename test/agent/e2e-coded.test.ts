/**
 * Compressed carriage against the real Server and Computer (docs/protocol.md §6.11; D63–D65): the
 * SDK's defaults get text in brotli, in both carriages, and random bytes identity; two pulls at
 * once verify; `compression: false` gets identity; the file on disk is the source, by sha256.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { textContent } from "../../bench/lib/text-corpus.ts";
import {
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const text = textContent("json", "e2e-coded", 3 * 1024 * 1024 + 777);
let stack: AgentStack;
let computer: RunningComputer;
let agent: AgentClient;
let randomSha: string;

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "assets", "text and random bytes");
  await writeFile(join(root, "records.json"), text);
  randomSha = await writeRandomFile(join(root, "noise.bin"), 2 * 1024 * 1024 + 3);
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

async function handle(relPath: string): Promise<string> {
  return (await agent.getSkillRaw("pc", "assets", relPath)).blob_handle!;
}

for (const binary of [true, false]) {
  void test(`defaults, ${binary ? "binary" : "base64"} carriage: text in br, noise identity`, async () => {
    const t = await readBlobWithInfo(agent, "pc", await handle("records.json"), { binary });
    assert.equal(sha256(t.value), sha256(text));
    assert.deepEqual(Object.keys(t.info.stats.codings), ["br"]);
    assert.ok(t.info.stats.wireBytes < text.length / 3, `${t.info.stats.wireBytes} wire bytes`);
    const n = await readBlobWithInfo(agent, "pc", await handle("noise.bin"), { binary });
    assert.equal(sha256(n.value), randomSha);
    assert.deepEqual(Object.keys(n.info.stats.codings), ["identity"]);
  });
}

void test("two pulls at once, to memory and to a file, both coded and verified", async () => {
  const out = join(stack.dir, "records.out");
  const [mem, file] = await Promise.all([
    readBlobWithInfo(agent, "pc", await handle("records.json")),
    agent.downloadBlob("pc", await handle("records.json"), out, { binary: false }),
  ]);
  assert.equal(sha256(mem.value), sha256(text));
  assert.equal(sha256(await readFile(out)), sha256(text));
  assert.deepEqual(Object.keys(file.stats.codings), ["br"]);
});

void test("compression: false: identity, as many wire bytes as payload bytes", async () => {
  const t = await readBlobWithInfo(agent, "pc", await handle("records.json"), {
    compression: false,
  });
  assert.equal(sha256(t.value), sha256(text));
  assert.deepEqual(Object.keys(t.info.stats.codings), ["identity"]);
  assert.equal(t.info.stats.wireBytes, text.length);
});
