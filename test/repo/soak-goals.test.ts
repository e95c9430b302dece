// @pure
/**
 * The soak's verdict on latency (test/soak/goals.ts, D72): an absolute bound on the
 * probe's loaded p99, whatever the quiet p99 (a fast quiet path with a good loaded figure passes;
 * a slow loaded figure fails even when the quiet one is as slow), and too few samples fail.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LatencyResult } from "../soak/analyze.ts";
import { LOADED_P99_MAX_MS, MIN_SAMPLES, latencyVerdicts } from "../soak/goals.ts";

function lat(quiet: number, loaded: number, samples = MIN_SAMPLES): LatencyResult {
  return {
    quiet_p99: quiet,
    loaded_p99: loaded,
    quiet_p50: quiet / 2,
    loaded_p50: loaded / 2,
    ratio: loaded / quiet,
    samples: { quiet: samples, loaded: samples, skipped: 0 },
    cycle_ratios: [],
  };
}

void test("the runs of 2026-12-05 (1.9 -> 5.3 ms, ratio 2.76) pass the absolute bound", () => {
  assert.deepEqual(latencyVerdicts(lat(1.9, 5.3)), []);
  assert.deepEqual(latencyVerdicts(lat(2.0, 5.1)), []);
});

void test("a loaded p99 over the bound fails, with the quiet figure beside it", () => {
  const [verdict, ...rest] = latencyVerdicts(lat(LOADED_P99_MAX_MS, LOADED_P99_MAX_MS + 0.1));
  assert.deepEqual(rest, []);
  assert.match(verdict!, /under load 25\.1 ms \(goal ≤ 25 ms; quiet 25\.0 ms\)/);
  assert.equal(latencyVerdicts(lat(1, Number.NaN)).length, 1, "no figure is no pass");
});

void test("too few samples fail whatever the figures", () => {
  assert.match(latencyVerdicts(lat(1, 2, MIN_SAMPLES - 1))[0]!, /too few probe samples/);
});
