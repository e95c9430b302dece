/**
 * Handles stay stateless with derived resources: the derived store is a cache, not a handle's
 * way to its bytes. A handle minted for a large SKILL.md by one Computer is served by the same
 * Computer restarted on its state directory (same handle key), whose store starts empty (the
 * folder is emptied at start: a file left there is gone), from the unchanged SKILL.md.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../../agent/client.ts";
import { readBlobWithInfo } from "../../../agent/pull.ts";
import type { RunningComputer } from "../../../computer/computer.ts";
import type { SkillService } from "../../../computer/skills/index.ts";
import { ServerHarness, TEST_TOKEN } from "../../support/server-harness.ts";
import { tempDir } from "../../support/skills-fixtures.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";
import { versionBytes } from "../support/rewriter.ts";

const body = versionBytes(3, 3 * 1024 * 1024);
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

let h: ServerHarness;
let agent: AgentClient;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let home = "";

before(async () => {
  tmp = await tempDir();
  home = join(tmp.dir, "home");
  await mkdir(join(home, "user", "big"), { recursive: true });
  const fm = "---\nname: big\ndescription: a big SKILL.md\n---\n";
  writeFileSync(join(home, "user", "big", "SKILL.md"), Buffer.concat([Buffer.from(fm), body]));
  h = await ServerHarness.start();
  agent = new AgentClient({ url: h.url, token: TEST_TOKEN, name: "agent-1" });
  await agent.connect();
  await agent.joinOffice("office-1");
});
after(async () => {
  await agent?.close();
  await h?.close();
  await tmp?.cleanup();
});

const skills = (pc: RunningComputer) => pc.services.find((s) => "derived" in s) as SkillService;

void test("a restarted Computer with an empty derived store serves an old handle of a large SKILL.md", async () => {
  let pc = await startHarnessComputer(h, tmp.dir, { skills: home });
  let handle = "";
  const stale = join(tmp.dir, "state", "derived", "f".repeat(64));
  try {
    await agent.waitForComputer("pc-1");
    const minted = await agent.getSkillRaw("pc-1", "big");
    assert.equal(minted.sha256, sha(body));
    handle = minted.blob_handle!;
    assert.ok((await agent.readBlob("pc-1", handle)).equals(body));
    writeFileSync(stale, "left over");
  } finally {
    await pc.close();
  }
  pc = await startHarnessComputer(h, tmp.dir, { skills: home });
  try {
    assert.equal(existsSync(stale), false, "the store was emptied at start");
    assert.equal(skills(pc).derived.productions.file, 0);
    await agent.waitForComputer("pc-1");
    const { value, info } = await readBlobWithInfo(agent, "pc-1", handle);
    assert.equal(info.sha256, sha(body));
    assert.ok(value.equals(body));
    assert.equal(skills(pc).derived.productions.file, 1, "made again from the SKILL.md");
  } finally {
    await pc.close();
  }
});
