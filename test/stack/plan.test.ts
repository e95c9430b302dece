// @pure
/** Scenario assignment: every scenario exactly once; the adversary's CLI download comes last. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assignScenarios, SCENARIOS } from "../../scripts/stack/plan.ts";
import { SCENARIO_IMPLS } from "../../scripts/stack/scenarios/index.ts";

void test("each scenario runs once, on some Agent, for any number of Agents", () => {
  const all = SCENARIOS.map((s) => s.id).sort();
  assert.deepEqual(Object.keys(SCENARIO_IMPLS).sort(), all, "every scenario has an implementation");
  for (const agents of [2, 3, 5, 20]) {
    const plan = assignScenarios(agents, []);
    assert.equal(plan.length, agents);
    assert.deepEqual(plan.flat().sort(), all);
    assert.equal(plan[0]!.at(-1), "cli-download", "Agent 1 leaves its office last");
    assert.ok(plan[0]!.includes("cross-office-probe"));
  }
});

void test("--only filters, and unknown ids are refused", () => {
  assert.deepEqual(assignScenarios(2, ["pull-serial"]), [[], ["pull-serial"]]);
  assert.throws(() => assignScenarios(2, ["nope"]), /unknown scenario: nope/);
});
