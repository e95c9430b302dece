/**
 * `npm run stack` end to end, as CI can afford it: the full set of scenarios on real processes,
 * with an 8 MiB big file instead of 64 MiB (the default run is measured by hand, see
 * docs/stack.md). Every scenario must pass, the exit code must be 0, and every process the stack
 * started must be gone when it exits.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SCENARIOS } from "../../scripts/stack/plan.ts";
import type { StackReport } from "../../scripts/stack/report.ts";
import { alive, descendants, startStack } from "../support/stack-harness.ts";

void test("every scenario passes and no process outlives the stack", async () => {
  const stack = startStack(["--json", "--agents", "2", "--big-mib", "8"]);
  // Collect the process tree while it runs (Computers' MCP servers and the CLI included).
  await stack.waitFor(/computer\(s\) starting/);
  const seen = new Set<number>();
  const sample = (): void => {
    for (const pid of descendants(stack.child.pid!)) seen.add(pid);
  };
  sample();
  const sampler = setInterval(sample, 200);
  const { code } = await stack.exited;
  clearInterval(sampler);

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
  assert.equal(code, 0);

  // Server + 2 Computers (+ their MCP servers) + 2 Agents at least were seen running.
  const started = [
    report.server.pid,
    ...report.computers.map((c) => c.pid),
    ...report.agents.map((a) => a.pid),
  ];
  for (const pid of started) assert.ok(seen.has(pid), `pid ${pid} was a child of the stack`);
  assert.ok(seen.size >= started.length + report.computers.length, `saw ${seen.size} processes`);
  const left = [...seen].filter(alive);
  assert.deepEqual(left, [], "processes left behind");
});
