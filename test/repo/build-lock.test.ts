/**
 * One build at a time per checkout (scripts/build.mjs): a build started while another holds the
 * lock waits for it, and a lock left by a build that was killed is taken over at once.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "../../scripts/launch/roles.ts";

const LOCK = join(REPO_ROOT, "node_modules/.cache/a2c-build.lock");

function build(): { done: Promise<number | null>; exited: () => boolean } {
  const child = spawn(process.execPath, [join(REPO_ROOT, "scripts/build.mjs"), "--quiet"], {
    stdio: "ignore",
  });
  let exited = false;
  const done = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      exited = true;
      resolve(code);
    }),
  );
  return { done, exited: () => exited };
}

void test("a build waits while the lock is held, and takes over a lock whose holder is dead", async () => {
  mkdirSync(LOCK, { recursive: true });
  writeFileSync(join(LOCK, "pid"), String(process.pid));
  try {
    const waiting = build();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(waiting.exited(), false, "the build waited for the holder");
    rmSync(LOCK, { recursive: true, force: true });
    assert.equal(await waiting.done, 0);
    // A holder that no longer exists: a pid past the kernel's pid_max range.
    mkdirSync(LOCK, { recursive: true });
    writeFileSync(join(LOCK, "pid"), "4194999");
    assert.equal(await build().done, 0, "the dead holder's lock was taken over");
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
});
