/**
 * Memory bound of derived resources: 32 parallel pulls of a 16 MiB SKILL.md body (the SDK's
 * base64 carriage and chunk size, one chunk in flight each, each pull verified) keep the
 * Computer's RSS growth under 128 MiB, and an unrelated small get_skill is still answered while
 * they run. The Computer runs as its own process (the shipped `a2c-computer`, with its bin's
 * Node flags and one hashing thread), so its peak RSS (VmHWM, reset through
 * /proc/<pid>/clear_refs after warm-up) is its own; Server and Agent run here. The SKILL.md is
 * touched before the pulls, so all 32 first chunks ask for a content signature nobody derived yet.
 * Linux only (procfs); a process-level measurement, which is what the bound is about.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../../agent/client.ts";
import { blobChunks } from "../../../agent/pull.ts";
import type { LaunchedProcess } from "../../../scripts/launch/process.ts";
import { startRole } from "../../../scripts/launch/roles.ts";
import {
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../../support/agent-stack.ts";

/**
 * Big enough that requests each holding a whole body (the failure this guards against) would
 * take four times the bound (32 × 16 MiB = 512 MiB); a bigger body only moves more bytes.
 */
const BODY = 16 * 1024 * 1024;
const PULLS = 32;
/**
 * One chunk in flight per pull: 32 requests at once, the Computer's read limit, each of which
 * used to hold a whole body. More per pull measures answers queued toward a slower Server
 * (base64 window 2: ~90 MiB, window 4: ~110-120 MiB, the same for a raw file), not the body.
 */
const PULL_WINDOW = 1;
const MiB = 1024 * 1024;

let stack: AgentStack;
let computer: LaunchedProcess | undefined;
let agent: AgentClient;
let skillMd = "";
let bodySha = "";

function status(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
    readFileSync(`/proc/${pid}/status`, "utf8"),
  );
  if (!m) throw new Error(`no ${field} for ${pid}`);
  return Number(m[1]) * 1024;
}

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "huge", "");
  await writeSkill(stack.home, "small", "A small skill.\n");
  // The body: BODY bytes after the frontmatter writeSkill wrote.
  const body = join(stack.dir, "body.bin");
  bodySha = await writeRandomFile(body, BODY);
  skillMd = join(root, "SKILL.md");
  writeFileSync(skillMd, Buffer.concat([readFileSync(skillMd), readFileSync(body)]));
  await writeRandomFile(join(root, "warm.bin"), 2 * MiB);
  // A nested SKILL.md of 2 MiB: derived into a file at warm-up (the worker loads that task).
  mkdirSync(join(root, "docs"));
  const warmMd = [Buffer.from("---\nname: d\n---\n"), readFileSync(join(root, "warm.bin"))];
  writeFileSync(join(root, "docs", "SKILL.md"), Buffer.concat(warmMd));
  computer = startRole("computer", {
    args: [
      ...["--server", stack.url, "--office", stack.office, "--name", "pc"],
      ...["--token", stack.token, "--skills", stack.home],
      ...["--state-dir", join(stack.dir, "state"), "--workers", "1"],
    ],
    env: { A2C_LOG_LEVEL: "error" },
  });
  agent = new AgentClient({ url: stack.url, token: stack.token, name: "agent" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  await agent.waitForComputer("pc");
});
after(async () => {
  await agent?.close();
  await computer?.kill("SIGKILL");
  await stack?.close();
});

async function pullAndHash(handle: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of blobChunks(agent, "pc", handle, { window: PULL_WINDOW }))
    h.update(chunk);
  return h.digest("hex");
}

void test("32 parallel pulls of a 16 MiB SKILL.md: Computer RSS growth < 128 MiB, a small get_skill still answered", async () => {
  const pid = computer!.pid;
  const minted = await agent.getSkillRaw("pc", "huge");
  assert.equal(minted.sha256, bodySha);
  assert.ok(minted.blob_handle);
  // Warm-up, not measured: the pool thread starts and loads both tasks (a 2 MiB file hashed, a
  // 2 MiB SKILL.md derived), and the paths of get_skill and get_blob have run once.
  const warm = await agent.getSkillRaw("pc", "huge", "warm.bin");
  await pullAndHash(warm.blob_handle!);
  const warmMd = await agent.getSkillRaw("pc", "huge", "docs/SKILL.md");
  await pullAndHash(warmMd.blob_handle!);
  await agent.getSkill("pc", "small");
  // A new content signature for the same bytes: the 32 pulls find nothing derived.
  const later = new Date(Date.now() + 5000);
  utimesSync(skillMd, later, later);
  writeFileSync(`/proc/${pid}/clear_refs`, "5"); // VmHWM := VmRSS
  const baseline = status(pid, "VmRSS");

  let finished = 0;
  const pulls = Array.from({ length: PULLS }, () =>
    pullAndHash(minted.blob_handle!).finally(() => finished++),
  );
  const small = await agent.getSkill("pc", "small");
  const runningWhenAnswered = PULLS - finished;
  const digests = await Promise.all(pulls);
  const peak = status(pid, "VmHWM");

  assert.equal(small.body, "A small skill.\n");
  assert.ok(runningWhenAnswered > 0, "the small get_skill was answered while pulls ran");
  for (const d of digests) assert.equal(d, bodySha);
  const growth = peak - baseline;
  console.log(
    `Computer RSS ${(baseline / MiB).toFixed(1)} MiB → peak ${(peak / MiB).toFixed(1)} MiB ` +
      `(growth ${(growth / MiB).toFixed(1)} MiB) over ${PULLS} pulls of ${BODY / MiB} MiB; ` +
      `small get_skill answered with ${runningWhenAnswered} pulls running`,
  );
  assert.ok(growth < 128 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`);
});
