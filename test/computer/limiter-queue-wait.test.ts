/**
 * The read limiter's wait bound (computer/blob/limiter.ts): a request that has waited
 * `maxQueueWaitMs` for a slot is refused (`queue_wait`) — by the timer armed for the oldest
 * waiter, or when a slot frees — and never gets a slot afterwards; younger waiters keep their
 * place. Driven by a fake clock: no sleeps, no real timers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Limiter,
  type LimiterClock,
  type Refusal,
  type Release,
} from "../../computer/blob/limiter.ts";

class FakeClock implements LimiterClock {
  t = 0;
  timers: { at: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.t + ms, fn, live: true };
    this.timers.push(timer);
    return () => void (timer.live = false);
  }
  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.t = due.at;
      due.live = false;
      due.fn();
    }
    this.t = until;
  }
  get armed(): number {
    return this.timers.filter((x) => x.live).length;
  }
}

/** Settles `p` into an inspectable box (microtasks only). */
function track(p: Promise<Release | Refusal>): { value: Release | Refusal | undefined } {
  const box: { value: Release | Refusal | undefined } = { value: undefined };
  void p.then((v) => (box.value = v));
  return box;
}
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

void test("a waiter past maxQueueWaitMs is refused queue_wait, by the timer and at hand-over", async () => {
  const clock = new FakeClock();
  const lim = new Limiter({ maxInFlight: 1, maxQueue: 10, maxQueueWaitMs: 1000, clock });
  const first = await lim.acquire();
  assert.equal(typeof first, "function");
  const a = track(lim.acquire()); // t=0
  clock.advance(400);
  const b = track(lim.acquire()); // t=400
  assert.equal(lim.queued, 2);
  assert.equal(clock.armed, 1, "one timer for the whole queue");

  // The slot stays busy: at t=1000 the timer refuses a (1000 ms), not b (600 ms).
  clock.advance(600);
  await flush();
  assert.equal(a.value, "queue_wait");
  assert.equal(b.value, undefined);
  assert.equal(lim.queued, 1);
  assert.equal(clock.armed, 1, "re-armed for the new head");

  // b reaches its bound too, with the timer not yet fired: the release must not hand it the slot.
  clock.t = 1400;
  const c = track(lim.acquire()); // t=1400, fresh
  (first as Release)();
  await flush();
  assert.equal(b.value, "queue_wait", "overdue at hand-over: refused, never given the slot");
  assert.equal(typeof c.value, "function", "the next waiter in line gets the slot");
  assert.equal(lim.active, 1);
  assert.equal(lim.queued, 0);
  (c.value as Release)();
  assert.equal(lim.active, 0);
  clock.advance(10_000); // the leftover timer fires on an empty queue and stays disarmed
  assert.equal(clock.armed, 0);
});

void test("length bound still answers queue_full at once; 0 = no wait bound; close = closed", async () => {
  const clock = new FakeClock();
  const lim = new Limiter({ maxInFlight: 1, maxQueue: 1, maxQueueWaitMs: 0, clock });
  const slot = (await lim.acquire()) as Release;
  const queued = track(lim.acquire());
  assert.equal(await lim.acquire(), "queue_full");
  clock.advance(3_600_000);
  await flush();
  assert.equal(queued.value, undefined, "no wait bound: still waiting after an hour");
  assert.equal(clock.armed, 0, "and no timer was armed");
  lim.close();
  await flush();
  assert.equal(queued.value, "closed");
  assert.equal(await lim.acquire(), "closed");
  slot();
});
