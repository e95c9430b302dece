/**
 * Compressed carriage against the real Server and Computer (docs/protocol.md §6.11; D63–D65): the
 * SDK's defaults get text in brotli, in both carriages, and random bytes identity; two pulls at
 * once verify; `compression: false` gets identity; the file on disk is the source, by sha256.
 * On a busy machine the Computer compresses at its cheaper level, and a text chunk that finds
 * its compression line full goes identity (D64): so every identity chunk of the text must be one
 * the Computer counted as turned away `busy`, and the wire bytes are judged at either level.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  readBlobWithInfo,
  type PullStats,
} from "../../agent/pull.ts";
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

/** Chunks the Computer sent identity so far because its compression line was full (D64). */
async function turnedAwayBusy(): Promise<number> {
  const { values } = await computer.metrics.codedChunks.get();
  return values.find((v) => v.labels.coding === "br" && v.labels.outcome === "busy")?.value ?? 0;
}

/**
 * What br makes of this text at either of the Computer's levels (D64: the busy one, br-1, at the
 * base64 chunk size leaves 0.26 of it; the idle one 0.19–0.23).
 */
const CODED_AT_MOST = 0.3;

interface TextPull {
  stats: PullStats;
  binary: boolean;
}

/**
 * The text's pulls came in br, but for chunks the Computer turned away busy meanwhile (`busy`:
 * how many it counted), and moved at most CODED_AT_MOST of the text on the wire, plus each
 * identity chunk (at most the pull's chunk ceiling); base64 carries 4 characters per 3 bytes.
 */
function assertTextCoded(pulls: TextPull[], busy: number): void {
  let identity = 0;
  for (const { stats, binary } of pulls) {
    const { br = 0, identity: plain = 0, ...other } = stats.codings;
    assert.deepEqual(other, {}, `only br and identity: ${JSON.stringify(stats.codings)}`);
    assert.ok(br > 0, `some chunks in br: ${JSON.stringify(stats.codings)}`);
    identity += plain;
    const ceiling = binary ? DEFAULT_BINARY_CHUNK_BYTES : DEFAULT_BASE64_CHUNK_BYTES;
    const bytes = CODED_AT_MOST * text.length + plain * ceiling;
    const most = binary ? bytes : (4 / 3) * bytes + 4 * (br + plain);
    assert.ok(stats.wireBytes < most, `${stats.wireBytes} wire bytes, ${plain} chunks identity`);
  }
  assert.ok(identity <= busy, `${identity} identity chunks, ${busy} turned away busy`);
}

for (const binary of [true, false]) {
  void test(`defaults, ${binary ? "binary" : "base64"} carriage: text in br, noise identity`, async () => {
    const busy = await turnedAwayBusy();
    const t = await readBlobWithInfo(agent, "pc", await handle("records.json"), { binary });
    assert.equal(sha256(t.value), sha256(text));
    assertTextCoded([{ stats: t.info.stats, binary }], (await turnedAwayBusy()) - busy);
    const n = await readBlobWithInfo(agent, "pc", await handle("noise.bin"), { binary });
    assert.equal(sha256(n.value), randomSha);
    assert.deepEqual(Object.keys(n.info.stats.codings), ["identity"]);
  });
}

void test("two pulls at once, to memory and to a file, both coded and verified", async () => {
  const out = join(stack.dir, "records.out");
  const busy = await turnedAwayBusy();
  const [mem, file] = await Promise.all([
    readBlobWithInfo(agent, "pc", await handle("records.json")),
    agent.downloadBlob("pc", await handle("records.json"), out, { binary: false }),
  ]);
  assert.equal(sha256(mem.value), sha256(text));
  assert.equal(sha256(await readFile(out)), sha256(text));
  const pulls = [
    { stats: mem.info.stats, binary: true },
    { stats: file.stats, binary: false },
  ];
  assertTextCoded(pulls, (await turnedAwayBusy()) - busy);
});

void test("compression: false: identity, as many wire bytes as payload bytes", async () => {
  const t = await readBlobWithInfo(agent, "pc", await handle("records.json"), {
    compression: false,
  });
  assert.equal(sha256(t.value), sha256(text));
  assert.deepEqual(Object.keys(t.info.stats.codings), ["identity"]);
  assert.equal(t.info.stats.wireBytes, text.length);
});
