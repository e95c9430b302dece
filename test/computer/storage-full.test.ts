/**
 * Disk errors are named (D57): the Computer's state directory on a real 16 MiB tmpfs, filled up
 * and freed again, through the real Server, a real MCP server and the Agent SDK.
 * - a tool result whose large image cannot be spooled is an `isError` result saying the Computer
 *   is out of disk space (`meta.a2c_error_reason: "storage_full"`), not "ask for a smaller result";
 * - a SKILL.md body that cannot be stored is `4017 storage_full` at mint and `4018 storage_full`
 *   at pull, not a bare 500;
 * - each store logs one line for the episode, however many requests fail, and counts every one
 *   (`a2c_computer_storage_failures_total`, `a2c_computer_storage_failing`);
 * - once space is free, both work again by themselves (one "writing again" line each).
 * Needs root (mount); skipped, with the reason, where mounting a tmpfs is not allowed.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient, BlobNotAccessibleError, SkillResourceError } from "../../agent/index.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { createSkillService } from "../../computer/skills/index.ts";
import { createToolService } from "../../computer/tools/service.ts";
import { startAgentStack, writeSkill, type AgentStack } from "../support/agent-stack.ts";
import { logLines, type LogLines } from "../support/log-lines.ts";
import { demoServer } from "../support/tools-harness.ts";

const BODY = randomBytes(768 * 1024).toString("hex"); // 1.5 MiB: a derived file, not memory
const PNG = { width: 900, height: 900, noise: true }; // ~2.4 MB: must be spooled to travel

function tryMount(dir: string): string | null {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", dir], {
      stdio: "pipe",
    });
    return null;
  } catch (err) {
    return `cannot mount a tmpfs here (${String((err as Error).message).split("\n")[0]})`;
  }
}

let stack: AgentStack;
let mnt: string;
let skip: string | null = null;
let pc: RunningComputer | undefined;
let agent: AgentClient;
let logs: LogLines;

before(async () => {
  stack = await startAgentStack();
  mnt = join(stack.dir, "state-mnt");
  mkdirSync(mnt);
  skip = tryMount(mnt);
  if (skip) return;
  await writeSkill(stack.home, "big-body", BODY);
  logs = logLines();
  pc = await startComputer({
    server: stack.url,
    office: stack.office,
    name: "pc",
    token: stack.token,
    stateDir: join(mnt, "state"),
    workers: 1,
    startTimeoutMs: 30_000,
    logger: logs.logger,
    services: [
      (ctx) =>
        createSkillService({
          config: ctx.config,
          home: stack.home,
          minter: ctx.minter,
          log: ctx.log,
          watch: false,
          ...(ctx.hashCache ? { fileHasher: ctx.hashCache } : {}),
          ...(ctx.derived ? { derived: ctx.derived } : {}),
        }),
      async (ctx) =>
        createToolService({
          config: ctx.config,
          servers: { demo: await demoServer() },
          minter: ctx.minter,
          log: ctx.log,
          storageFaults: ctx.metrics,
        }),
    ],
  });
  agent = new AgentClient({ url: stack.url, token: stack.token, name: "boss" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  await agent.waitForComputer("pc", { timeoutMs: 10_000 });
});

after(async () => {
  await agent?.close();
  await pc?.close();
  if (!skip) execFileSync("umount", ["-l", mnt]);
  await stack?.close();
});

/** Fills the tmpfs with one file until the disk says ENOSPC. */
async function fill(): Promise<string> {
  const path = join(mnt, "filler");
  const fh = await open(path, "w");
  const block = Buffer.alloc(256 * 1024, 7);
  try {
    for (;;) await fh.write(block);
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, "ENOSPC");
  } finally {
    await fh.close();
  }
  return path;
}

async function metric(name: "storageFailures" | "storageFailing", labels: object): Promise<number> {
  const m = await pc!.metrics[name].get();
  const want = Object.entries(labels);
  const found = m.values.find((v) =>
    want.every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x),
  );
  return found?.value ?? 0;
}

void test("out of space: named answers, one log line per store, and service resumes", async (t) => {
  if (skip) return t.skip(skip);
  // A handle minted while there is room, then its derived file is lost: a pull must make it
  // again (and, the store's index forgetting it then, so must a mint).
  const minted = (await agent.getSkillRaw("pc", "big-body")) as { blob_handle?: string };
  assert.equal(typeof minted.blob_handle, "string");
  const derivedDir = join(mnt, "state", "derived");
  for (const f of readdirSync(derivedDir)) rmSync(join(derivedDir, f), { force: true });

  const filler = await fill();
  for (let i = 0; i < 3; i++) {
    const result = await agent.callTool("pc", "demo__png", PNG, { timeout: 10 });
    assert.equal(result.isError, true);
    const text = (result.content[0] as { text?: string }).text ?? "";
    assert.match(text, /out of disk space/);
    assert.doesNotMatch(text, /smaller result/);
    assert.equal((result.meta as { a2c_error_reason?: string }).a2c_error_reason, "storage_full");

    await assert.rejects(agent.readBlob("pc", minted.blob_handle!), (err: unknown) => {
      assert.ok(err instanceof BlobNotAccessibleError);
      assert.equal(err.reason, "storage_full");
      return true;
    });
    await assert.rejects(agent.getSkillRaw("pc", "big-body"), (err: unknown) => {
      assert.ok(err instanceof SkillResourceError);
      assert.equal(err.code, 4017);
      assert.equal(err.reason, "storage_full");
      return true;
    });
  }
  assert.equal(logs.count(/^spool: out of disk space/), 1, "one line for the episode");
  assert.equal(logs.count(/^derived: out of disk space/), 1, "one line for the episode");
  assert.equal(await metric("storageFailures", { store: "spool", reason: "storage_full" }), 3);
  assert.ok((await metric("storageFailures", { store: "derived", reason: "storage_full" })) >= 6);
  assert.equal(await metric("storageFailing", { store: "spool" }), 1);
  assert.equal(logs.count(/internal error|Internal error/), 0);

  await rm(filler);
  const result = await agent.callTool("pc", "demo__png", PNG, { timeout: 10 });
  assert.notEqual(result.isError, true);
  assert.ok(
    result.content.some((c) => c.type === "image"),
    "the image, restored from the spool",
  );
  const body = await agent.readBlob("pc", minted.blob_handle!);
  const md = await agent.getSkillRaw("pc", "big-body");
  assert.equal(createHash("sha256").update(body).digest("hex"), md.sha256);
  assert.equal(logs.count("spool: writing again"), 1);
  assert.equal(logs.count("derived: writing again"), 1);
  assert.equal(await metric("storageFailing", { store: "spool" }), 0);
  assert.equal(await metric("storageFailing", { store: "derived" }), 0);
});
