/**
 * Faults: 20 downloads run at once while the Computer process is SIGKILLed at three
 * seeded random points and restarted with the same state dir (same handle key, D14). All 20
 * finish verified, with the handles minted before the first kill.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { spawnComputerProc, type Proc } from "../support/reliability-procs.ts";
import { writeSkill } from "../support/reliability-stack.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";
import { writeRandomFile } from "../support/agent-stack.ts";

const FILES = 20;
const SIZE = 1_000_000;
const OFFICE = "fault-office";
let dir: string;
let h: ServerHarness;
let agent: AgentClient;
let pc: Proc | undefined;
const sha: string[] = [];

function startPc(): Promise<Proc> {
  return spawnComputerProc({
    url: h.url,
    office: OFFICE,
    name: "pc",
    token: TEST_TOKEN,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    env: { A2C_LOG_LEVEL: "error" },
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-kill-"));
  const root = await writeSkill(join(dir, "home"), "data", {});
  for (let i = 0; i < FILES; i++)
    sha.push(await writeRandomFile(join(root, `f${i}.bin`), SIZE + i));
  h = await ServerHarness.start();
  agent = new AgentClient({ url: h.url, token: TEST_TOKEN, name: "agent-k" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  pc = await startPc();
  await agent.waitForComputer("pc", { timeoutMs: 60_000 });
});
after(async () => {
  await pc?.kill();
  await agent?.close();
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Deterministic "random" kill points (fractions of all bytes), seeded. */
function killPoints(seed: number, n: number): number[] {
  let x = seed;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    out.push(0.1 + (0.8 * x) / 2 ** 31);
  }
  return out.sort((a, b) => a - b);
}

void test("Computer SIGKILLed at 3 random points of 20 downloads: 20 of 20 verified, same handles", async () => {
  const handles: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const ret = await agent.getSkill("pc", "data", `f${i}.bin`);
    assert.ok(ret.blob_handle);
    handles.push(ret.blob_handle);
  }
  const total = FILES * SIZE;
  const points = killPoints(20_251_202, 3);
  const progress = new Array<number>(FILES).fill(0);
  let kills = 0;
  let restarting: Promise<void> = Promise.resolve();
  const onProgress = (i: number, bytes: number): void => {
    progress[i] = bytes;
    const done = progress.reduce((a, b) => a + b, 0) / total;
    if (kills < points.length && done >= points[kills]! && pc) {
      kills++;
      const victim = pc;
      pc = undefined;
      restarting = victim.kill("SIGKILL").then(async () => {
        pc = await startPc();
      });
    }
  };
  const results = await Promise.all(
    handles.map((handle, i) =>
      agent.downloadBlob("pc", handle, join(dir, `out${i}.bin`), {
        window: 4,
        chunkBytes: 64 * 1024,
        expectedSha256: sha[i],
        resumeTimeoutMs: 120_000,
        onProgress: (p) => onProgress(i, p.bytes),
      }),
    ),
  );
  await restarting;
  assert.equal(kills, points.length, "every kill happened mid-transfer");
  for (let i = 0; i < FILES; i++) {
    const got = await readFile(join(dir, `out${i}.bin`));
    assert.equal(createHash("sha256").update(got).digest("hex"), sha[i], `file ${i} verified`);
    assert.equal(results[i]!.sha256, sha[i]);
  }
  assert.ok(
    results.some((r) => r.stats.resumes > 0),
    "downloads resumed after the kills",
  );
});
