// `npm run bench -- --quick`, stack half (user view, many Agents, rewrites, Computer cost, HTTP
// surface; the transfer half is quick-run.test.ts): every section completes against the real
// stack, rewrites deliver no corrupt bytes and no chunk disagrees with its sha256, the user view
// names the carriage of every row, and the run exits 0.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UserViewData } from "../../bench/sections/user-view.ts";
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
        "userView,manyAgents,rewrites,computerCost,http",
        "--out",
        out,
      ]);
      assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
      const r = run.report;
      assert.equal(r.ok, true);
      assert.deepEqual(r.integrity.failures, []);
      for (const id of ["userView", "manyAgents", "rewrites", "computerCost", "http"] as const) {
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
      // The Computer and user-view goals are judged from data (the sweep's and links' are not
      // this half's).
      const other = (id: string): boolean =>
        id.startsWith("small-chunks-") ||
        id.startsWith("links-") ||
        id === "loopback-ratios" ||
        id === "fast-paths";
      for (const g of r.goals.filter((x) => !other(x.id)).slice(3))
        assert.notEqual(g.status, "not measured", `${g.text}: ${g.why ?? ""}`);
      assert.ok(existsSync(join(out, "many-agents.svg")));
      assert.ok(existsSync(join(out, "user-view.svg")));
      assert.equal(r.verdict.status, "PARTIAL");
      assert.match(run.stdout, /^bench: PARTIAL \(6 of 18 goals measured, /m);
      // The user view: both carriages, each row with the carriage it reported.
      const uv = r.sections.userView;
      assert.ok(uv?.status === "done");
      const rows = (uv.data as UserViewData).rows;
      const carriage = Object.fromEntries(rows.map((x) => [x.id, x.carriage]));
      assert.deepEqual(carriage, {
        "cli-binary": "binary",
        "sdk-binary": "binary",
        "cli-base64": "base64",
        "sdk-base64": "base64",
        "bare-binary": "binary",
        "bare-base64": "base64",
        http: "http",
      });
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
