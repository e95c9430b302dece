// @pure
// The sweep marks a chunk size as exceeding the buffer exactly where protocol/sizing.ts says the
// ack stops fitting: the largest fit is measured, one base64 quantum more is marked, not sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodedAckBytes } from "../../protocol/index.ts";
import { fitsBuffer, largestFit, sizePoints } from "../../bench/lib/points.ts";
import { SAMPLE_ENVELOPE } from "../../bench/sections/micro.ts";

for (const buffer of [1_000_000, 4_000_000]) {
  void test(`base64 at ${buffer}: the largest fit fits, 3 bytes more does not, and the real ack agrees`, () => {
    const max = largestFit(buffer, "base64", SAMPLE_ENVELOPE);
    assert.ok(fitsBuffer(max, buffer, "base64", SAMPLE_ENVELOPE));
    assert.ok(!fitsBuffer(max + 3, buffer, "base64", SAMPLE_ENVELOPE));
    const ack = { ...SAMPLE_ENVELOPE, eof: false, blob: Buffer.alloc(max).toString("base64") };
    assert.ok(encodedAckBytes(ack) <= buffer);
  });

  void test(`binary at ${buffer}: the attachment itself is the limit on WebSocket`, () => {
    assert.equal(largestFit(buffer, "binary", SAMPLE_ENVELOPE), buffer);
    assert.ok(!fitsBuffer(buffer + 1, buffer, "binary", SAMPLE_ENVELOPE));
  });
}

void test("sizePoints adds each buffer's largest fit and marks what fits which buffer", () => {
  const pts = sizePoints(
    [64 * 1024, 2 * 1024 * 1024],
    [1_000_000, 4_000_000],
    "base64",
    SAMPLE_ENVELOPE,
  );
  const sizes = pts.map((p) => p.bytes);
  assert.deepEqual(
    sizes,
    [...sizes].sort((a, b) => a - b),
  );
  const max1 = largestFit(1_000_000, "base64", SAMPLE_ENVELOPE);
  const p1 = pts.find((p) => p.bytes === max1);
  assert.ok(p1?.isMax && p1.fits["1000000"] && p1.fits["4000000"]);
  const big = pts.find((p) => p.bytes === 2 * 1024 * 1024);
  assert.equal(big?.fits["1000000"], false);
  assert.equal(big?.fits["4000000"], true);
});
