/**
 * A read that starts on a path idle for longer than the controller's slowdown interval
 * (agent/path-controller.ts): the slowdown begins on that read's first `maySend` and shrinks the
 * budget below the chunk sized a moment before. With nothing in flight no answer would ever wake
 * the path again, so the read must go out anyway. Found in the soak: 12 of 64 Agents' second
 * reads never sent a request. On the simulated link (test/support/link-sim.ts, which schedules as
 * agent/path.ts does), a sweep of rates, round trips and idle gaps: every second read finishes.
 */
// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import { PathController } from "../../agent/path-controller.ts";
import { simulate } from "../support/link-sim.ts";

void test("a read after an idle gap always sends, whatever slowdown begins on its first ask", () => {
  const stranded: string[] = [];
  for (const mbit of [2, 4, 20, 100]) {
    for (const rtt of [2, 20, 50, 100]) {
      for (let gap = 1000; gap <= 30_000; gap += 1500) {
        const r = simulate({ rates: [{ at: 0, mbit }], baseRttMs: rtt, until: gap + 60_000 }, [
          {
            controller: new PathController(),
            flows: [{ bytes: 300_000 }, { startAt: gap, bytes: 300_000 }],
          },
        ]);
        if (r.flows[0]![1]!.doneAt === undefined) stranded.push(`${mbit} Mbit/s ${rtt} ms +${gap}`);
      }
    }
  }
  assert.deepEqual(stranded, []);
});

void test("with nothing in flight one request may go out even over the budget", () => {
  const c = new PathController();
  assert.equal(c.maySend(0, 10 * c.budgetBytes), true);
  const t = c.onSend(0, 4096);
  assert.equal(c.maySend(0, c.budgetBytes), false, "all of a request must fit beside others");
  c.onAnswer(50, t, 4096);
  assert.equal(c.maySend(50, 10 * c.budgetBytes), true);
});
