// @pure
/**
 * A refused join's reason (docs/protocol.md §3.5, D55): `"<token>: <text>"`, read back by clients
 * to decide whether to retry. Only the known passing tokens are transient; an unknown token, a
 * reason without one and a non-string are final.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { JoinRefusal, joinRefusal, parseJoinRefusal } from "../../protocol/index.ts";

void test("every token round-trips; only registry_unavailable, office_busy, node_fenced pass", () => {
  const passing = new Set(["registry_unavailable", "office_busy", "node_fenced"]);
  for (const token of Object.values(JoinRefusal)) {
    const parsed = parseJoinRefusal(joinRefusal(token, "some text: with a colon"));
    assert.deepEqual(parsed, {
      token,
      text: "some text: with a colon",
      transient: passing.has(token),
    });
  }
});

void test("unknown tokens, reasons without a token and non-strings are final", () => {
  assert.deepEqual(parseJoinRefusal("future_reason: try later"), {
    token: "future_reason",
    text: "try later",
    transient: false,
  });
  assert.deepEqual(parseJoinRefusal("Room already has an agent"), {
    token: null,
    text: "Room already has an agent",
    transient: false,
  });
  assert.equal(parseJoinRefusal("Registry_unavailable: x").token, null, "tokens are lower case");
  assert.equal(parseJoinRefusal(null).transient, false);
  assert.equal(parseJoinRefusal(42).text, "");
});
