/**
 * The CLI's closing line for a download (agent/progress.ts `downloadSummary`): what it names, and
 * that a resumed download's rate counts only the bytes this run moved.
 */
// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import type { PullStats } from "../../agent/path.ts";
import { downloadSummary } from "../../agent/progress.ts";

const MiB = 1024 * 1024;
const SHA = "ab".repeat(32);

function stats(over: Partial<PullStats>): PullStats {
  return {
    requests: 10,
    bytesReceived: 64 * MiB,
    wireBytes: 64 * MiB,
    codings: { identity: 10 },
    busy: 0,
    timeouts: 0,
    resumes: 0,
    restarts: 0,
    rate: 0,
    rttMs: 12,
    elapsedMs: 1000,
    fromCache: false,
    resumedFrom: 0,
    ...over,
  };
}

/** The line for 64 MiB written to /x/big.bin in 2 s, binary carriage. */
const summary = (over: Partial<PullStats>): string =>
  downloadSummary({
    file: "/x/big.bin",
    size: 64 * MiB,
    sha256: SHA,
    seconds: 2,
    carriage: "binary",
    stats: stats(over),
  });

void test("a whole download: its size over its time", () => {
  assert.equal(
    summary({}),
    `wrote /x/big.bin: 64.0 MiB (67108864 bytes), sha256 ${SHA} verified, binary carriage, ` +
      "identity, 1.00 wire bytes per byte, 2.00 s, 33.6 MB/s, rtt 12 ms",
  );
});

void test("a resumed download says from where, and its rate counts the bytes it moved", () => {
  assert.equal(
    summary({ bytesReceived: 48 * MiB, wireBytes: 48 * MiB, resumedFrom: 16 * MiB }),
    `wrote /x/big.bin: 64.0 MiB (67108864 bytes), sha256 ${SHA} verified, binary carriage, ` +
      "identity, 1.00 wire bytes per byte, resumed from 16.0 MiB, 2.00 s, 25.2 MB/s, rtt 12 ms",
  );
});
