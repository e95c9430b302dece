/**
 * `base64DecodedLength` (protocol/sizing.ts): exact for every padded standard base64 text, from
 * the text itself or from the char codes of its last two characters, and -1 for a length no
 * padded base64 text has.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import { base64DecodedLength, base64Length } from "../../protocol/index.ts";

const of = (s: string): number =>
  base64DecodedLength(s.length, s.charCodeAt(s.length - 1), s.charCodeAt(s.length - 2));

void test("exact for the base64 of 0..4096 random bytes, and agrees with base64Length", () => {
  for (let n = 0; n <= 4096; n++) {
    const text = randomBytes(n).toString("base64");
    assert.equal(of(text), n, `${n} bytes`);
    assert.equal(text.length, base64Length(n));
  }
});

void test("from bytes of the text: the same answer", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const text = Buffer.from(Buffer.from(bytes).toString("base64"), "latin1");
      const n = text.length;
      return base64DecodedLength(n, text[n - 1] ?? 0, text[n - 2] ?? 0) === bytes.length;
    }),
  );
});

void test("a length that is not a multiple of 4 (or not a length) is -1", () => {
  for (const s of ["a", "ab", "abc", "abcde", "QUJD="]) assert.equal(of(s), -1, s);
  assert.equal(base64DecodedLength(-4, 0, 0), -1);
  assert.equal(base64DecodedLength(4.5, 0, 0), -1);
  assert.equal(base64DecodedLength(Number.NaN, 0, 0), -1);
  assert.equal(of(""), 0);
});
