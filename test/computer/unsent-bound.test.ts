/**
 * The Computer's bound on its unsent answer bytes in time (computer/chunk-scheduler.ts `UnsentBound`, D109), on
 * a scripted clock: the bound is the byte bound until the socket is seen draining with bytes
 * queued, then what it drains in the target at the largest rate of the last second; a look after
 * the socket ran empty says less than the path and only raises the rate; when the link slows the
 * bound follows within the rate window.
 */
// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import { DRAIN_RATE_WINDOW_MS, UnsentBound } from "../../computer/chunk-scheduler.ts";

const opts = { maxBytes: 256 * 1024, minBytes: 16 * 1024, targetMs: 50 };

void test("scripted looks: the bound follows the drain rate, in time", () => {
  const b = new UnsentBound(opts);
  assert.equal(b.limitBytes, 256 * 1024, "no rate yet: the byte bound");
  b.look(0, 100_000, 100_000); // 100 kB handed, none sent yet
  b.look(5, 100_000, 90_000); // too soon after the last look: no sample
  assert.equal(b.rate, 0);
  b.look(100, 100_000, 50_000); // 50 kB left in 100 ms with bytes queued: 500 B/ms
  assert.equal(b.rate, 500);
  assert.equal(b.limitBytes, 25_000); // 50 ms of it
  // The socket ran empty by the next look: 50 kB in 200 ms is less than the path; ignored.
  b.look(300, 100_000, 0);
  assert.equal(b.rate, 500);
  // Idle socket at the last look: the next interval gives no sample (nothing was queued).
  b.look(400, 300_000, 100_000);
  assert.equal(b.rate, 500);
  // 100 kB in 50 ms from a backlogged socket, though it ran empty: it raises the rate.
  b.look(450, 300_000, 0);
  assert.equal(b.rate, 2000);
  assert.equal(b.limitBytes, 100_000);
  // 20 MB/s: the byte bound caps the limit.
  b.look(460, 900_000, 400_000);
  b.look(480, 900_000, 200_000);
  assert.equal(b.rate, 10_000);
  assert.equal(b.limitBytes, 256 * 1024);
});

void test("a link that slows: the bound is the new rate's within the rate window", () => {
  const b = new UnsentBound(opts);
  let handed = 0;
  let sent = 0;
  let unsent = 0;
  // 6.25 kB/ms (50 Mbit/s) for a second, then 250 B/ms (2 Mbit/s); the socket always backlogged.
  for (let t = 0; t <= 4000; t += 20) {
    const rate = t <= 1000 ? 6250 : 250;
    if (t > 0) sent += rate * 20;
    handed = sent + 100_000;
    unsent = handed - sent;
    b.look(t, handed, unsent);
    if (t === 1000) assert.equal(b.limitBytes, 256 * 1024);
    if (t === 1000 + DRAIN_RATE_WINDOW_MS + 40) assert.equal(b.rate, 250);
  }
  assert.equal(b.limitBytes, 16 * 1024, "50 ms at 2 Mbit/s is under the least bound");
});
