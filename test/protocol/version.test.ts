// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isCompatible,
  parseVersion,
  PROTOCOL_FEATURES,
  PROTOCOL_VERSION,
  supportedRange,
  supportsFeature,
} from "../../protocol/index.ts";

void test("PROTOCOL_VERSION is 0.4.0 and parses", () => {
  assert.equal(PROTOCOL_VERSION, "0.4.0");
  assert.deepEqual(parseVersion(PROTOCOL_VERSION), { major: 0, minor: 4, patch: 0 });
});

void test("the gate of 0.4.0: 0.4.x in, 0.3.x and 0.5.x out", () => {
  const server = parseVersion(PROTOCOL_VERSION)!;
  for (const ok of ["0.4.0", "0.4.5", "0.4.999"]) {
    assert.equal(isCompatible(parseVersion(ok)!, server), true, ok);
  }
  for (const bad of ["0.3.0", "0.3.2", "0.3.9", "0.5.0", "1.4.0"]) {
    assert.equal(isCompatible(parseVersion(bad)!, server), false, bad);
  }
  assert.deepEqual(supportedRange(server), { min: "0.4.0", max: "0.4.999" });
});

void test("supportsFeature: put_blob from 0.4.0 (upstream's minor gate), pickString from 0.3.2", () => {
  assert.equal(supportsFeature("0.4.0", "putBlob"), true);
  assert.equal(supportsFeature("0.4.5", "putBlob"), true);
  assert.equal(supportsFeature("0.3.9", "putBlob"), false);
  assert.equal(supportsFeature("1.0.0", "putBlob"), false);
  assert.equal(supportsFeature("garbage", "putBlob"), false);
  assert.equal(supportsFeature("0.3.1", "pickStringOptionObjects"), false);
  assert.equal(supportsFeature("0.3.2", "pickStringOptionObjects"), true);
  for (const f of Object.keys(PROTOCOL_FEATURES) as (keyof typeof PROTOCOL_FEATURES)[]) {
    assert.equal(supportsFeature(PROTOCOL_VERSION, f), true, `this stack speaks ${f}`);
  }
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
