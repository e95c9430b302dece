// @pure
/**
 * The pull's rate cap and progress rules on a simulated clock (agent/rate-limit.ts,
 * agent/path.ts): curl's rate syntax; a token bucket whose waits are exact and whose
 * long-run rate is the cap whatever the request sizes and short answers; the minimum progress
 * over a sliding window, paused while the Computer is away; and the judgment of short answers
 * (an honest clamp, slivers, a contract error after `SLIVER_LIMIT` in a row).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChunkContractError, TooSlowError } from "../../agent/errors.ts";
import {
  AnswerJudge,
  DEFAULT_SPEED_LIMIT,
  RateGate,
  SLIVER_LIMIT,
  SpeedGuard,
  minimumProgress,
} from "../../agent/path.ts";
import { RateLimit, parseRate } from "../../agent/rate-limit.ts";

void test("parseRate reads curl's syntax (powers of 1024) and refuses the rest", () => {
  const K = 1024;
  const cases: [string, number | undefined][] = [
    ["1000", 1000],
    ["500k", 500 * K],
    ["500K", 500 * K],
    ["2M", 2 * K * K],
    ["1.5m", 1.5 * K * K],
    ["1G", K * K * K],
    ["2MB/s", 2 * K * K],
    ["2MiB", 2 * K * K],
    ["0", undefined],
    ["-1k", undefined],
    ["2X", undefined],
    ["", undefined],
    ["k", undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseRate(text), want, text);
});

void test("a rate cap: the first request goes at once, then each waits exactly its bytes' time", () => {
  const cap = new RateLimit(1000, 0); // 1000 bytes a second, 250 bytes of burst
  assert.equal(cap.wait(0), 0);
  cap.take(750, 0); // 500 bytes of debt
  assert.equal(cap.wait(0), 500);
  assert.equal(cap.wait(499), 1);
  assert.equal(cap.wait(500), 0);
  cap.take(1000, 500);
  assert.equal(cap.wait(500), 1000);
  // A short answer gives back what it did not carry.
  cap.settle(600);
  assert.equal(cap.wait(500), 400);
  // Idle time fills the bucket only to its burst.
  assert.equal(cap.wait(60_000), 0);
  cap.take(1250, 60_000);
  assert.equal(cap.wait(60_000), 1000);
});

void test("a rate cap holds its rate over many requests of any size", () => {
  const cap = new RateLimit(2 * 1024 * 1024, 0);
  let now = 0;
  let sent = 0;
  const sizes = [262_144, 4096, 100_000, 262_144, 65_536, 1];
  for (let i = 0; now < 10_000; i++) {
    now += cap.wait(now);
    const n = sizes[i % sizes.length]!;
    cap.take(n, now);
    sent += n;
  }
  const rate = (sent * 1000) / now / (2 * 1024 * 1024);
  assert.ok(Math.abs(rate - 1) < 0.03, `${rate} of the cap`);
});

void test("a gate waits for the slowest of its caps and charges them all", () => {
  const client = new RateLimit(1000, 0);
  const own = new RateLimit(100, 0);
  const gate = new RateGate(client, undefined, own);
  assert.equal(gate.active, true);
  assert.equal(gate.chunkBytes, 4096);
  assert.equal(gate.wait(0), 0);
  gate.take(125, 0);
  assert.equal(gate.wait(0), 1000); // own: 100 bytes of debt at 100 a second
  assert.equal(client.wait(0), 0); // client: 125 of its 250 bytes of burst left
  assert.equal(new RateGate().active, false);
  assert.equal(new RateGate().wait(0), 0);
});

void test("minimum progress: a window under the limit ends the pull; pauses do not count", () => {
  const g = new SpeedGuard(1024, 10_000);
  g.start(0);
  for (let t = 0; t < 10_000; t += 1000) g.add(2048, t);
  assert.equal(g.check(9_999), undefined, "not a whole window yet");
  assert.equal(g.check(10_000), undefined, "2 KiB/s over the window");
  // Nothing more arrives: the window slides past the bytes.
  assert.equal(g.check(14_000), undefined);
  const slow = g.check(16_000);
  assert.ok(slow instanceof TooSlowError && slow.reason === "speed", String(slow));
  assert.match(slow.message, /moved \d+ bytes in 10 s, less than the minimum 1024 bytes a second/);
  // A pull waiting for its Computer is not judged; it starts a fresh window when it is back.
  g.pause();
  assert.equal(g.check(100_000), undefined);
  g.start(100_000);
  assert.equal(g.check(109_000), undefined);
  assert.ok(g.check(110_000) instanceof TooSlowError);
  assert.equal(new SpeedGuard(0, 1000).check(1e9), undefined, "0 turns it off");
});

void test("a rate cap below the minimum progress lowers the minimum to half the cap", () => {
  const none = new RateGate();
  assert.equal(minimumProgress({}, none).limit, DEFAULT_SPEED_LIMIT);
  assert.equal(minimumProgress({ speedLimit: 0 }, none).limit, 0);
  const slow = new RateGate(new RateLimit(1000, 0), new RateLimit(600, 0));
  assert.equal(minimumProgress({}, slow).limit, 300);
  assert.equal(minimumProgress({ speedLimit: 100, speedTimeMs: 5000 }, slow).limit, 100);
  assert.equal(minimumProgress({ speedTimeMs: 5000 }, slow).timeMs, 5000);
});

void test("short answers: an honest clamp is learned once and never judged", () => {
  const j = new AnswerJudge();
  assert.equal(j.judge(0, 16384, 16384, false), undefined, "a full answer");
  assert.equal(j.judge(0, 65536, 2048, false), 2048, "the Computer's own ceiling");
  for (let i = 0; i < 10 * SLIVER_LIMIT; i++) {
    assert.equal(j.judge(i * 2048, 2048, 2048, false), undefined);
    // Its cap is computed per request, a few bytes either way.
    assert.equal(j.judge(i * 2048, 2048, 2040, false), 2040);
  }
  assert.equal(j.judge(0, 2048, 5, true), undefined, "the last chunk");
});

void test("short answers: slivers in a row are a contract error, one full answer resets them", () => {
  const j = new AnswerJudge();
  for (let i = 1; i < SLIVER_LIMIT; i++) assert.equal(j.judge(i, 16384, 1, false), undefined);
  assert.equal(j.judge(0, 16384, 16384, false), undefined);
  for (let i = 1; i < SLIVER_LIMIT; i++) j.judge(i, 16384, 1, false);
  assert.throws(
    () => j.judge(99, 16384, 1, false),
    (e: unknown) =>
      e instanceof ChunkContractError &&
      /^chunk at offset 99: the Computer keeps answering far less than asked without eof \(16 answers in a row of at most 1 byte\)$/.test(
        e.message,
      ),
  );
  // Past its own ceiling: a quarter of it is a sliver even above 1 KiB.
  const k = new AnswerJudge();
  assert.equal(k.judge(0, 1 << 20, 65536, false), 65536);
  for (let i = 1; i < SLIVER_LIMIT; i++) k.judge(i, 65536, 1024, false);
  assert.throws(() => k.judge(0, 65536, 1024, false), /its own ceiling 65536/);
});
