// @pure
// The small-chunk goals judge the fixed per-request cost: the median paired ratio of the sweep's
// 16–32 KiB points per carriage, and nothing else. A larger chunk's ratio does not move them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { evaluateGoals } from "../../bench/goals.ts";
import type { SweepData } from "../../bench/sections/sweep.ts";
import { KiB, median } from "../../bench/lib/stats.ts";
import type { Report } from "../../bench/report/types.ts";
import { fixtureReport } from "./fixture-report.ts";

function sweepOf(r: Report): SweepData {
  const s = r.sections.sweep;
  assert.ok(s?.status === "done");
  return s.data as SweepData;
}

const goal = (r: Report, id: string) => {
  const g = evaluateGoals(r).find((x) => x.id === id);
  assert.ok(g, id);
  return g;
};

void test("judged on the 16–32 KiB points of each carriage only", async () => {
  const r = await fixtureReport();
  for (const carriage of ["base64", "binary"] as const) {
    const points = sweepOf(r)
      .buffers.flatMap((b) => b.points)
      .filter((p) => p.carriage === carriage);
    const small = points.filter((p) => p.chunkBytes <= 32 * KiB);
    assert.ok(small.length > 0 && small.length < points.length);
    const expected = median(small.map((p) => p.ratio ?? 0));
    const g = goal(r, `small-chunks-${carriage}`);
    assert.equal(g.status, expected >= 0.85 ? "met" : "missed");
    assert.match(
      g.measured,
      new RegExp(`^median ${(100 * expected).toFixed(1)}% over ${small.length} points`),
    );

    // A larger chunk's ratio does not move the goal; the small points do.
    for (const p of points) if (p.chunkBytes > 32 * KiB) p.ratio = 0.01;
    assert.equal(goal(r, `small-chunks-${carriage}`).measured, g.measured);
    for (const p of small) p.ratio = 0.5;
    const low = goal(r, `small-chunks-${carriage}`);
    assert.equal(low.status, "missed");
    assert.ok(low.why && low.why.length > 0);
    for (const p of small) p.ratio = 0.9;
    assert.equal(goal(r, `small-chunks-${carriage}`).status, "met");
  }
});

void test("not measured, with the reason, when the sweep has no chunk of 32 KiB or less", async () => {
  const r = await fixtureReport();
  for (const b of sweepOf(r).buffers) b.points = b.points.filter((p) => p.chunkBytes > 32 * KiB);
  const g = goal(r, "small-chunks-binary");
  assert.equal(g.status, "not measured");
  assert.match(g.why ?? "", /no chunk size up to 32 KiB/);
});
