// @pure
/**
 * What the upload store takes as a chunk's `blob` (D78): standard base64 with or
 * without padding, or a binary attachment; anything else is refused with upstream's message.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { chunkBytes } from "../../computer/upload/store.ts";

void test("standard base64, padded or not, decodes to its bytes; attachments pass as they are", () => {
  for (let len = 0; len < 40; len++) {
    const bytes = randomBytes(len);
    const b64 = bytes.toString("base64");
    assert.deepEqual(Buffer.from(chunkBytes(b64) as Uint8Array), bytes, b64);
    assert.deepEqual(Buffer.from(chunkBytes(b64.replace(/=+$/, "")) as Uint8Array), bytes);
  }
  const raw = randomBytes(5);
  assert.equal(chunkBytes(raw), raw);
  assert.deepEqual(
    Buffer.from(chunkBytes(raw.buffer.slice(0)) as Uint8Array).length,
    raw.buffer.byteLength,
  );
});

void test("anything else is refused: garbage, whitespace, base64url, bad padding, non-strings", () => {
  const bad = [
    "!!!not-base64!!!",
    "AA AA",
    "AAAA\n",
    "AAA AAAA",
    "AAAA AAA",
    " AAAA",
    "AAé=",
    "AB=C",
    "=AAA",
    "AAAA===",
    "AAA==",
    "A",
    "AAAAA",
    "AA-_",
    "QUJD_A==",
  ];
  for (const s of bad) assert.equal(chunkBytes(s), "blob is not valid base64", JSON.stringify(s));
  for (const v of [12345, null, true, { a: 1 }, ["AAAA"]]) {
    assert.equal(chunkBytes(v), "blob must be a base64 string", JSON.stringify(v));
  }
});
