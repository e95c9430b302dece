/**
 * On a machine without the system packages the suite drives (Redis, nginx, iproute2, chromium,
 * promtool), the whole suite's `npm test` stops at once, before any build, with one line that
 * names the command installing them (README, "Try it").
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { REPO_ROOT } from "../support/agent-stack.ts";

void test("npm test without the system packages stops at once with one line", async () => {
  const started = performance.now();
  const { code, stdout, stderr } = await new Promise<{
    code: number | null;
    stdout: string;
    stderr: string;
  }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--conditions=@a2c-smcp/source", "--import", "tsx", "scripts/run-tests.ts"],
      {
        cwd: REPO_ROOT,
        timeout: 60_000,
        // No directory on PATH holds them (the check also looks in /usr/sbin: iproute2, nginx).
        env: { ...process.env, PATH: "", CHROMIUM_PATH: "/nonexistent/chromium" },
      },
      (_err, out, err) => resolve({ code: child.exitCode, stdout: out, stderr: err }),
    );
  });
  assert.equal(code, 1);
  assert.equal(stdout, "");
  const lines = stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, /redis-server.*chromium.*`sudo scripts\/install-system-packages`/);
  // Before the build and the test files' compile: a process start, not minutes.
  assert.ok(performance.now() - started < 30_000);
});
