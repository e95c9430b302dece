/**
 * The SDK's per-chunk shape check of a get_blob answer (agent/blob-answer.ts) accepts exactly
 * what the protocol's `GetBlobRetSchema` accepts: compared on generated answers whose every
 * field is valid, invalid in one of the ways a Computer could get it wrong, or missing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { GetBlobRetSchema } from "@a2c-smcp/protocol";
import { isGetBlobRet, parseBlobAnswer } from "../../agent/blob-answer.ts";
import { InvalidResponseError, ProtocolError } from "../../agent/errors.ts";

const MISSING = Symbol("missing");
const anyJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.constant(undefined),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
const size = fc.oneof(
  fc.nat(),
  fc.constant(Number.MAX_SAFE_INTEGER),
  fc.integer({ min: -5, max: -1 }),
  fc.double({ noDefaultInfinity: false }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 0.5),
  fc.string({ maxLength: 3 }),
);
const hex = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{64}$/),
  fc.stringMatching(/^[0-9A-F]{64}$/),
  fc.stringMatching(/^[0-9a-f]{63,65}$/),
  fc.string({ maxLength: 70 }),
);
const blob = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
  fc.uint8Array({ maxLength: 8 }),
  fc.constant(new ArrayBuffer(4)),
  fc.constant(new Uint16Array(2)),
  fc.constant(new DataView(new ArrayBuffer(2))),
);
const format = fc.constantFrom("base64", "binary", "Binary", "", undefined, 1, null);

const field = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 6, arbitrary: valid }, anyJson, fc.constant(MISSING));

const answer = fc
  .record({
    blob_handle: field(fc.string({ maxLength: 8 })),
    mime_type: field(fc.string({ maxLength: 8 })),
    total_size: field(size),
    sha256: field(hex),
    chunk_offset: field(size),
    eof: field(fc.boolean()),
    blob: field(blob),
    req_id: field(fc.string({ maxLength: 8 })),
    blob_format: fc.oneof(format, fc.constant(MISSING)),
    extra: fc.oneof(anyJson, fc.constant(MISSING)),
  })
  .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== MISSING)));

void test("accepts exactly what GetBlobRetSchema accepts", () => {
  fc.assert(
    fc.property(answer, (a) => {
      assert.equal(isGetBlobRet(a), GetBlobRetSchema.safeParse(a).success, JSON.stringify(a));
    }),
    { numRuns: 20_000 },
  );
});

void test("non-objects are refused as the schema refuses them", () => {
  for (const v of [null, undefined, 1, "x", true, [], [1], () => undefined]) {
    assert.equal(isGetBlobRet(v), GetBlobRetSchema.safeParse(v).success);
  }
});

void test("a flat error answer is thrown typed, anything else malformed as InvalidResponseError", () => {
  assert.throws(
    () => parseBlobAnswer({ code: 4018, message: "Blob not accessible" }),
    ProtocolError,
  );
  assert.throws(() => parseBlobAnswer({ blob: "x" }), InvalidResponseError);
});
