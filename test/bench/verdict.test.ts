// @pure
// The bench's verdict line: PASS only when every goal was measured and met; a partial run says
// how many goals it measured and which it did not; a missed goal is named; a failed section or a
// wrong byte is FAIL, the only verdict that exits non-zero.
import { test } from "node:test";
import assert from "node:assert/strict";
import { verdictLine, verdictOf } from "../../bench/report/verdict.ts";
import type { Goal } from "../../bench/report/types.ts";

const goal = (id: string, status: Goal["status"]): Goal => ({
  id,
  text: id,
  status,
  measured: "",
  evidence: "",
});
const ids = ["defaults", "ceiling-base64", "ceiling-binary", "per-chunk", "eld"];
const all = (status: Goal["status"]): Goal[] => ids.map((id) => goal(id, status));
const none = { failedSections: [], integrityFailures: 0, quick: false };

void test("every goal measured and met: PASS, exit 0", () => {
  const v = verdictOf({ ...none, goals: all("met") });
  assert.equal(verdictLine(v), "bench: PASS (5 of 5 goals met)");
  assert.equal(v.exitCode, 0);
});

void test("some goals not measured: PARTIAL with the count and the names, exit 0", () => {
  const goals = [
    ...all("met").slice(0, 3),
    goal("per-chunk", "not measured"),
    goal("eld", "not measured"),
  ];
  const v = verdictOf({ ...none, goals });
  assert.equal(
    verdictLine(v),
    "bench: PARTIAL (3 of 5 goals measured, all met; not measured: per-chunk, eld)",
  );
  assert.equal(v.exitCode, 0);
  const w = verdictOf({ ...none, goals: [goal("defaults", "missed"), ...goals.slice(1)] });
  assert.equal(w.status, "PARTIAL");
  assert.match(w.detail, /^3 of 5 goals measured, 2 met; missed: defaults; not measured: /);
});

void test("every goal measured, one missed: MISSED naming it, exit 0", () => {
  const goals = [goal("defaults", "missed"), ...all("met").slice(1)];
  const v = verdictOf({ ...none, goals });
  assert.equal(verdictLine(v), "bench: MISSED (4 of 5 goals met; missed: defaults)");
  assert.equal(v.exitCode, 0);
});

void test("a failed section or a wrong byte: FAIL, exit 1, whatever the goals", () => {
  const failed = verdictOf({ ...none, goals: all("met"), failedSections: ["sweep"] });
  assert.equal(failed.status, "FAIL");
  assert.equal(failed.exitCode, 1);
  assert.match(failed.detail, /^failed sections: sweep; 5 of 5 goals met/);
  const wrong = verdictOf({ ...none, goals: all("not measured"), integrityFailures: 2 });
  assert.equal(
    verdictLine(wrong),
    "bench: FAIL (2 integrity failure(s); 0 of 5 goals measured; not measured: defaults, ceiling-base64, ceiling-binary, per-chunk, eld)",
  );
  assert.equal(wrong.exitCode, 1);
});

void test("a quick run says its speeds are a smoke test", () => {
  const v = verdictOf({ ...none, goals: all("met"), quick: true });
  assert.equal(v.status, "PASS");
  assert.match(v.detail, /quick run: speeds are a smoke test, not a measurement$/);
});
