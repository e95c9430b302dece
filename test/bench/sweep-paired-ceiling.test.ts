// The sweep measures every point's ceiling next to it, repetition by repetition: each stack
// repetition is paired with a bare relay repetition of the same carriage, chunk size and window,
// report.json keeps every repetition of both sides, and the point's ratio is the median of the
// pairs' ratios. The ceiling goals are judged from those pairs, so they are measured even when
// the ceiling section itself did not run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SweepData } from "../../bench/sections/sweep.ts";
import { median } from "../../bench/lib/stats.ts";
import { runBench } from "../support/bench-run.ts";

void test("every sweep point is paired with a ceiling point", { timeout: 600_000 }, async () => {
  const out = mkdtempSync(join(tmpdir(), "bench-paired-"));
  try {
    const run = await runBench(["--quick", "--only", "sweep", "--out", out]);
    assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
    const sweep = run.report.sections.sweep;
    assert.equal(sweep?.status, "done");
    const points = (sweep.data as SweepData).buffers.flatMap((b) => b.points);
    assert.ok(points.some((p) => p.carriage === "binary"));
    const reps = run.report.meta.plan.pointReps;
    assert.ok(reps >= 2);
    for (const p of points) {
      assert.ok(p.ceilingMbps !== null && p.ceilingMbps > 0, `no ceiling for ${JSON.stringify(p)}`);
      assert.equal(p.spread.reps.length, reps);
      assert.equal(p.bare.reps.length, reps);
      assert.deepEqual(
        p.pairRatios.reps,
        p.spread.reps.map((x, i) => x / p.bare.reps[i]!),
      );
      assert.equal(p.ratio, median(p.pairRatios.reps));
      assert.equal(p.mbps, median(p.spread.reps));
      assert.equal(p.ceilingMbps, median(p.bare.reps));
      assert.ok(p.spread.min <= p.mbps && p.mbps <= p.spread.max);
      assert.equal(p.sectionRatio, null); // no ceiling section in this run
    }
    for (const id of ["ceiling-base64", "ceiling-binary"])
      assert.notEqual(run.report.goals.find((g) => g.id === id)?.status, "not measured", id);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
