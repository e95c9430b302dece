// @pure
// The event-loop delay the bench and the soak report is the time beyond the monitor's tick:
// monitorEventLoopDelay records whole tick intervals (an idle loop at resolution 10 reads ~10 ms),
// so summarizeEld subtracts the resolution from every percentile and the max, never going below 0,
// and keeps the raw interval alongside.
import { test } from "node:test";
import assert from "node:assert/strict";
import { delayBeyondInterval, summarizeEld, type NsHistogram } from "../../bench/lib/eld.ts";

const MS = 1e6;

/** A histogram holding exactly these tick intervals (ms), nearest-rank percentiles. */
function fakeHistogram(intervalsMs: number[]): NsHistogram {
  const sorted = [...intervalsMs].sort((a, b) => a - b);
  return {
    percentile: (p) => (sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0) * MS,
    max: (sorted.at(-1) ?? 0) * MS,
    count: sorted.length,
  };
}

void test("an idle loop at resolution 10 (intervals 10.0–10.5 ms) has well under 1 ms of delay", () => {
  const idle = Array.from({ length: 200 }, (_, i) => 10 + (i % 6) * 0.1);
  const s = summarizeEld(fakeHistogram(idle), 10);
  assert.ok(s.p99 < 1, `p99 ${s.p99}`);
  assert.ok(Math.abs(s.intervalP99 - 10.5) < 1e-9, "the raw interval stays visible");
  assert.equal(s.resolutionMs, 10);
  assert.equal(s.count, 200);
});

void test("a 23 ms interval p99 at resolution 10 is 13 ms of delay; the max shifts the same", () => {
  const ticks = [...Array.from({ length: 97 }, () => 10.2), 23, 23, 40];
  const s = summarizeEld(fakeHistogram(ticks), 10);
  assert.ok(Math.abs(s.intervalP99 - 23) < 1e-9);
  assert.ok(Math.abs(s.p99 - 13) < 1e-9);
  assert.ok(Math.abs(s.max - 30) < 1e-9);
  assert.ok(Math.abs(s.intervalMax - 40) < 1e-9);
  assert.ok(Math.abs(s.p50 - 0.2) < 1e-9);
});

void test("a tick that came early (interval below the resolution) is 0 delay, not negative", () => {
  assert.equal(delayBeyondInterval(4.07, 5), 0);
  assert.equal(summarizeEld(fakeHistogram([4.9, 4.9, 5]), 5).p99, 0);
});

void test("an empty histogram (no tick yet) reports zeros", () => {
  const s = summarizeEld({ percentile: () => 0, max: 0, count: 0 }, 10);
  assert.deepEqual(
    [s.p50, s.p99, s.max, s.intervalP99, s.intervalMax, s.count],
    [0, 0, 0, 0, 0, 0],
  );
});
