/**
 * `npm run stack` end to end, as CI can afford it: every scenario on real processes, with an
 * 8 MiB big file instead of 64 MiB (the default run is measured by hand, see docs/stack.md).
 * With `--keep` the same run then serves a second client: the Agent CLI command the stack prints,
 * run as-is from another process and directory, downloads the big file, verified against the
 * generator's sha256. SIGINT then stops everything, and no process the stack started (seen from
 * /proc during the whole run, MCP servers and the CLI included) is left.
 * (One stack run for all of this keeps the suite within its CPU budget.)
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { DemoManifest } from "../../scripts/stack/demo-data.ts";
import { SCENARIOS } from "../../scripts/stack/plan.ts";
import type { StackReport } from "../../scripts/stack/report.ts";
import { alive, cmdline, descendants, startStack } from "../support/stack-harness.ts";

function sh(command: string, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    child.once("exit", (code) => resolve({ code, out }));
  });
}

void test("every scenario passes; --keep serves the printed CLI command; SIGINT leaves nothing", async () => {
  const here = mkdtempSync(join(tmpdir(), "a2c-stack-e2e-"));
  // INIT_CWD is where `npm run` was typed: the printed command writes its file there.
  const stack = startStack(["--json", "--keep", "--agents", "2", "--big-mib", "8"], {
    INIT_CWD: here,
    A2C_STACK_DEADLINE_MS: "160000",
  });
  let stopped = false;
  const seen = new Set<number>();
  const sample = (): void => {
    for (const pid of descendants(stack.child.pid!)) seen.add(pid);
  };
  const sampler = setInterval(sample, 200);
  try {
    const [, command] = await stack.waitFor(/^\s+(npm --prefix \S+ run agent -- .*)$/);
    const [, manifestPath] = await stack.waitFor(/demo manifest\s+(\S+)/);

    // The report (JSON on stdout) is complete before the connect help is printed.
    const report = JSON.parse(stack.stdout()) as StackReport;
    const failed = report.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`);
    assert.deepEqual(failed, [], "failed scenarios");
    assert.deepEqual(report.missing, [], "scenarios without a result");
    assert.deepEqual(
      report.results.map((r) => r.id).sort(),
      SCENARIOS.map((s) => s.id).sort(),
      "one result per scenario",
    );
    for (const r of report.results.filter((x) => x.verified !== null)) {
      assert.equal(r.verified, true, `${r.id} verified`);
      assert.ok(r.bytes > 0, `${r.id} moved bytes`);
    }
    assert.equal(report.ok, true);
    const started = [
      report.server.pid,
      ...report.computers.map((c) => c.pid),
      ...report.agents.map((a) => a.pid),
    ];
    for (const pid of started) assert.ok(seen.has(pid), `pid ${pid} was a child of the stack`);

    // Kept: the Server and Computers still run; the printed command works from elsewhere.
    sample();
    const running = descendants(stack.child.pid!).map(cmdline).join("\n");
    // The shipped bins (scripts/launch/).
    assert.match(running, /server\/dist\/main\.js/);
    assert.equal(running.match(/computer\/dist\/main\.js/g)?.length, 2, running);
    const run = await sh(command!, here);
    assert.equal(run.code, 0, run.out);
    const manifest = JSON.parse(readFileSync(manifestPath!, "utf8")) as DemoManifest;
    const bytes = readFileSync(join(here, "big.bin"));
    assert.equal(bytes.length, manifest.files.big.size);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), manifest.files.big.sha256);

    sample();
    stack.child.kill("SIGINT");
    const { code } = await stack.exited;
    stopped = true;
    assert.equal(code, 0, "a kept run that passed exits 0 on Ctrl-C");
    assert.ok(seen.size >= started.length + report.computers.length, `saw ${seen.size} processes`);
    const left = [...seen].filter(alive);
    assert.deepEqual(left, [], `left behind:\n${left.map(cmdline).join("\n")}`);
  } finally {
    clearInterval(sampler);
    // A failed assertion must not leave a kept stack running.
    if (!stopped) {
      stack.child.kill("SIGINT");
      await stack.exited;
    }
    rmSync(here, { recursive: true, force: true });
  }
});
