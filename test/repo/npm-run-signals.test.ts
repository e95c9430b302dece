/**
 * SIGTERM to `npm run server` / `npm run computer` (npm's own pid, as a process manager or a
 * terminal's kill sends it) stops node too. The scripts `exec` node: through npm's `sh -c`
 * alone, dash did not pass the signal on and node kept running as an orphan.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { groupAlive, waitGroupGone } from "../../scripts/launch/process.ts";
import { REPO_ROOT } from "../support/agent-stack.ts";

const HANG_GUARD_MS = 15_000;

/** Starts `npm run <script> -- args` as a group leader; resolves once `ready` matched a line. */
async function npmRun(script: string, args: string[], ready: RegExp): Promise<number> {
  const child = spawn("npm", ["run", "--silent", script, "--", ...args], {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, A2C_LOG_LEVEL: "info" },
  });
  const pid = child.pid!;
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer): void => {
      if (ready.test(chunk.toString("utf8"))) resolve();
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.once("exit", (code) => reject(new Error(`npm run ${script} exited ${code} early`)));
  });
  child.stdout.resume();
  child.stderr.resume();
  return pid;
}

for (const [script, args, ready] of [
  ["server", ["--port", "0", "--token", "t"], /^listening on /m],
  ["computer", ["--server", "http://127.0.0.1:9", "--office", "o", "--name", "n"], /retrying/],
] as const) {
  void test(`SIGTERM to npm run ${script} leaves no process`, async (t) => {
    const state = await mkdtemp(join(tmpdir(), "a2c-npm-run-"));
    const extra = script === "computer" ? ["--state-dir", state] : [];
    const pid = await npmRun(script, [...args, ...extra], ready);
    t.after(async () => {
      if (groupAlive(pid)) process.kill(-pid, "SIGKILL");
      await rm(state, { recursive: true, force: true });
    });
    process.kill(pid, "SIGTERM");
    assert.ok(await waitGroupGone(pid, HANG_GUARD_MS), `npm run ${script} left a process`);
  });
}
