/**
 * The figures the links and paths sections take from a download's progress marks: bytes at a
 * moment (linear between marks), how long until a 1 s window carried a rate, and the bytes of
 * each round trip from the first answer on with the first that reached a ceiling.
 * @pure
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { bytesAt, rounds, secondsToRate } from "../../bench/lib/progress.ts";

/** A download at `bytesPerSecond`, marked every 50 ms for `seconds`. */
function steady(
  bytesPerSecond: number,
  seconds: number,
  from = 0,
  at0 = 0,
): Array<[number, number]> {
  return Array.from({ length: Math.round(seconds * 20) }, (_, i) => {
    const ms = from + (i + 1) * 50;
    return [ms, at0 + (bytesPerSecond * (i + 1) * 50) / 1000] as [number, number];
  });
}

void test("bytes at a moment are interpolated between marks and held after the last", () => {
  const p: Array<[number, number]> = [
    [100, 1000],
    [300, 5000],
  ];
  assert.equal(bytesAt(p, 50), 500);
  assert.equal(bytesAt(p, 200), 3000);
  assert.equal(bytesAt(p, 1000), 5000);
});

void test("seconds to a rate: the end of the first 1 s window from which it held", () => {
  // 10 s at 25 kB/s (0.2 Mbit/s), then 250 kB/s (2 Mbit/s).
  const slow = steady(25_000, 10);
  const p = [...slow, ...steady(250_000, 5, 10_000, slow[slow.length - 1]![1])];
  assert.equal(secondsToRate(p, 0, 10_000, 1.8e6), null);
  assert.equal(secondsToRate(p, 9_000, 15_000, 1.8e6), 1.9);
  assert.equal(secondsToRate(p, 10_000, 15_000, 1.8e6), 1);
  // What was on its way carries the first second after a drop; the rate that holds is low.
  const fast = steady(250_000, 1);
  const slump = [...fast, ...steady(25_000, 5, 1000, fast[fast.length - 1]![1])];
  assert.equal(secondsToRate(slump, 0, 6000, 1.8e6), null);
  assert.equal(secondsToRate(slump, 0, 6000, 0.18e6), 1);
});

void test("rounds count from the first answer; the first round at 90 % of the ceiling is named", () => {
  // Nothing for 700 ms, then each 600 ms round trip's answers at once, a window that doubles
  // from 64 kB up to 1 MB.
  const p: Array<[number, number]> = [[650, 0]];
  let bytes = 0;
  for (let k = 0, win = 64_000; k < 8; k++, win = Math.min(2 * win, 1_000_000)) {
    p.push([700 + k * 600 - 1, bytes]);
    bytes += win;
    p.push([700 + k * 600, bytes]);
  }
  p.push([700 + 8 * 600, bytes]);
  const r = rounds(p, 600, 1_000_000);
  assert.deepEqual(
    r.perRound.map((b) => Math.round(b)),
    [64_000, 128_000, 256_000, 512_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000],
  );
  assert.equal(r.roundsToCeiling, 5);
  assert.equal(rounds(p, 600, 2_000_000).roundsToCeiling, null);
  assert.deepEqual(rounds([], 600, 1), { perRound: [], roundsToCeiling: null });
});
