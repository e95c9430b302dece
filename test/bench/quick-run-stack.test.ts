// `npm run bench -- --quick`, stack half (many Agents, rewrites, Computer cost, HTTP surface; the
// transfer half is quick-run.test.ts): every section completes against the real stack, rewrites
// deliver no corrupt bytes and no chunk disagrees with its sha256, and the run exits 0.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runBench } from "../support/bench-run.ts";

void test(
  "the quick bench run (stack sections) passes with zero corrupt deliveries",
  { timeout: 900_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-quick-stack-"));
    try {
      const run = await runBench([
        "--quick",
        "--only",
        "manyAgents,rewrites,computerCost,http",
        "--out",
        out,
      ]);
      assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
      const r = run.report;
      assert.equal(r.ok, true);
      assert.deepEqual(r.integrity.failures, []);
      for (const id of ["manyAgents", "rewrites", "computerCost", "http"] as const) {
        assert.equal(
          r.sections[id]?.status,
          "done",
          `section ${id}: ${JSON.stringify(r.sections[id]).slice(0, 500)}`,
        );
      }
      const rw = r.sections.rewrites;
      assert.ok(rw?.status === "done");
      for (const row of (rw.data as { rows: Array<{ corrupt: number; chunksDisagreeing: number }> })
        .rows) {
        assert.equal(row.corrupt, 0);
        assert.equal(row.chunksDisagreeing, 0);
      }
      // The Computer goals are judged from data.
      for (const g of r.goals.slice(3))
        assert.notEqual(g.status, "not measured", `${g.text}: ${g.why ?? ""}`);
      assert.ok(existsSync(join(out, "many-agents.svg")));
      assert.equal(r.verdict.status, "PARTIAL");
      assert.match(run.stdout, /^bench: PARTIAL \(3 of 6 goals measured, /m);
      // Every round of every step is kept.
      const many = r.sections.manyAgents;
      assert.ok(many?.status === "done");
      for (const row of (many.data as { rows: Array<{ aggregate: { reps: number[] } }> }).rows)
        assert.equal(row.aggregate.reps.length, r.meta.plan.manyAgentsReps);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
