// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isCompatible,
  parseVersion,
  PROTOCOL_VERSION,
  supportedRange,
} from "../../protocol/index.ts";

void test("PROTOCOL_VERSION is 0.3.0 and parses", () => {
  assert.equal(PROTOCOL_VERSION, "0.3.0");
  assert.deepEqual(parseVersion(PROTOCOL_VERSION), { major: 0, minor: 3, patch: 0 });
});

void test("parseVersion accepts exactly three integer parts", () => {
  for (const bad of [
    "",
    "abc",
    "0.3",
    "0.3.0.1",
    "0.3.0-dev",
    " 0.3.0",
    "0.3.0 ",
    "01.3.0",
    "-1.3.0",
    "0.3.x",
  ]) {
    assert.equal(parseVersion(bad), null, bad);
  }
  assert.deepEqual(parseVersion("10.20.30"), { major: 10, minor: 20, patch: 30 });
});

void test("v0.x: major and minor equal, patch free", () => {
  const server = parseVersion("0.3.0")!;
  assert.equal(isCompatible(parseVersion("0.3.7")!, server), true);
  assert.equal(isCompatible(parseVersion("0.2.0")!, server), false);
  assert.equal(isCompatible(parseVersion("0.4.0")!, server), false);
  assert.equal(isCompatible(parseVersion("1.3.0")!, server), false);
  assert.deepEqual(supportedRange(server), { min: "0.3.0", max: "0.3.999" });
});

void test("v1+: major equal and client minor <= server minor", () => {
  const server = parseVersion("1.4.2")!;
  assert.equal(isCompatible(parseVersion("1.0.9")!, server), true);
  assert.equal(isCompatible(parseVersion("1.4.0")!, server), true);
  assert.equal(isCompatible(parseVersion("1.5.0")!, server), false);
  assert.equal(isCompatible(parseVersion("2.0.0")!, server), false);
});
