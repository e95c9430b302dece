/**
 * `decodeBlobEarly`: the pull loop's decode inside socket.io's ack callback. A well-formed base64
 * `blob` lands in the target the loop handed out; anything else is left exactly as it came, for
 * `checkChunk` / `placeChunk` to reject as before (never a partial or misplaced decode).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeBlobEarly } from "../../agent/pull-chunk.ts";
import type { DecodeTarget } from "../../agent/pull-types.ts";

function target(max: number): DecodeTarget & { given: Buffer[]; taken: Buffer[] } {
  const t = {
    given: [] as Buffer[],
    taken: [] as Buffer[],
    take: (len: number): Buffer | undefined => {
      if (len > max) return undefined;
      const b = Buffer.alloc(len);
      t.taken.push(b);
      return b;
    },
    give: (b: Buffer): void => void t.given.push(b),
  };
  return t;
}

void test("well-formed base64 is decoded into the target and replaces the string", () => {
  const bytes = Buffer.from("hello, chunk bytes!");
  const ret = { chunk_offset: 0, blob: bytes.toString("base64") };
  const t = target(1024);
  decodeBlobEarly([ret], t);
  assert.ok(Buffer.isBuffer(ret.blob));
  assert.equal(ret.blob, t.taken[0], "the target itself, no copy");
  assert.deepEqual(ret.blob, bytes);
});

void test("no target: a fresh Buffer (first chunk, before the destination exists)", () => {
  const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253]);
  const ret = { blob: bytes.toString("base64") };
  decodeBlobEarly([ret]);
  assert.deepEqual(ret.blob, bytes);
});

void test("longer than the region allows: left a string (checkChunk rejects it)", () => {
  const ret = { blob: Buffer.alloc(100).toString("base64") };
  const t = target(99);
  decodeBlobEarly([ret], t);
  assert.equal(typeof ret.blob, "string");
  assert.equal(t.taken.length, 0);
});

void test("not valid base64: target given back, left a string", () => {
  const ret = { blob: "@@@@@@@@" };
  const t = target(1024);
  decodeBlobEarly([ret], t);
  assert.equal(ret.blob, "@@@@@@@@");
  assert.equal(t.given.length, 1);
  assert.equal(t.given[0], t.taken[0]);
});

void test("impossible length, empty, binary, error payloads and non-objects are untouched", () => {
  const odd = { blob: "abc" };
  const empty = { blob: "" };
  const bin = { blob: Buffer.from([1]) };
  const flat = { code: 4018, message: "Blob not accessible" };
  const t = target(1024);
  for (const args of [[odd], [empty], [bin], [flat], [null], ["x"], []]) decodeBlobEarly(args, t);
  assert.equal(odd.blob, "abc");
  assert.equal(empty.blob, "");
  assert.deepEqual(bin.blob, Buffer.from([1]));
  assert.equal(t.taken.length, 0);
});
