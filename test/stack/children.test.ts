/**
 * ChildSet stops whole process groups: a child's own children (a Computer's MCP servers) go too,
 * and a group that ignores SIGTERM is SIGKILLed after the grace period.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { groupAlive } from "../../scripts/launch/process.ts";
import { ChildSet } from "../../scripts/stack/children.ts";
import { alive } from "../support/stack-harness.ts";

// A parent that starts a grandchild ignoring SIGTERM, prints the grandchild's pid, then waits.
const PARENT = `
const { spawn } = require("node:child_process");
const g = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
console.log("grandchild " + g.pid);
setInterval(() => {}, 1000);
`;

void test("stopAll reaches grandchildren and SIGKILLs what ignores SIGTERM", async () => {
  const logs = mkdtempSync(join(tmpdir(), "a2c-children-"));
  try {
    const set = new ChildSet(logs);
    let grandchild = 0;
    const seen = new Promise<void>((resolve) => {
      set.spawn({
        name: "parent",
        command: process.execPath,
        args: ["-e", PARENT],
        cwd: logs,
        env: process.env,
        onLine: (line) => {
          const m = /^grandchild (\d+)/.exec(line);
          if (m) {
            grandchild = Number(m[1]);
            resolve();
          }
        },
      });
    });
    await seen;
    const parent = set.children[0]!;
    assert.ok(alive(parent.pid) && alive(grandchild));
    const started = Date.now();
    await set.stopAll(300);
    assert.equal(groupAlive(parent.pid), false, "group empty");
    assert.equal(alive(grandchild), false, "grandchild gone");
    assert.equal(alive(parent.pid), false, "parent gone");
    assert.ok(Date.now() - started < 5000);
    assert.throws(() => set.spawn({ name: "late", command: "true", args: [], cwd: logs, env: {} }));
  } finally {
    rmSync(logs, { recursive: true, force: true });
  }
});
