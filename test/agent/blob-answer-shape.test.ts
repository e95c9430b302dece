/**
 * The SDK's per-chunk shape check of a get_blob answer (`isGetBlobRet` in protocol/requests.ts)
 * accepts exactly what the protocol's `GetBlobRetSchema` accepts. Compared on generated answers
 * that start valid and get up to two fields changed (a wrong value of any JSON type, one a
 * Computer could get almost right, or a missing field), so both verdicts occur often: the test
 * counts them and fails unless each is a sizeable share of the runs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { GetBlobRetSchema, isGetBlobRet } from "@a2c-smcp/protocol";
import { parseBlobAnswer } from "../../agent/client.ts";
import { InvalidResponseError, ProtocolError } from "../../agent/errors.ts";

const MISSING = Symbol("missing");
const anyJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 4 }),
  fc.constant(undefined),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);

/** For each field: valid values, and values a Computer could get almost right. */
const FIELDS: Record<string, [fc.Arbitrary<unknown>, fc.Arbitrary<unknown>]> = {
  blob_handle: [fc.string({ maxLength: 8 }), fc.constantFrom(1, null, ["h"])],
  mime_type: [fc.string({ maxLength: 8 }), fc.constantFrom(0, null, false)],
  total_size: [
    fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)),
    fc.constantFrom(-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, "10", -0.1),
  ],
  sha256: [
    fc.stringMatching(/^[0-9a-f]{64}$/),
    fc.oneof(fc.stringMatching(/^[0-9A-F]{64}$/), fc.stringMatching(/^[0-9a-f]{63}$/)),
  ],
  chunk_offset: [fc.nat(), fc.constantFrom(-1, 1.5, "0", Number.NaN)],
  eof: [fc.boolean(), fc.constantFrom(0, 1, "true", null)],
  blob: [
    fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
      fc.uint8Array({ maxLength: 8 }),
      fc.constant(new ArrayBuffer(4)),
    ),
    fc.constantFrom(new Uint16Array(2), new DataView(new ArrayBuffer(2)), 1, null, [1, 2]),
  ],
  req_id: [fc.string({ maxLength: 8 }), fc.constantFrom(1, null)],
};
const KEYS = Object.keys(FIELDS);

const valid = fc.record(Object.fromEntries(KEYS.map((k) => [k, FIELDS[k]![0]])));
const format = fc.constantFrom("base64", "binary", "Binary", "", 1, null, MISSING);
/** The optional fields of D63: mostly absent or valid, sometimes almost right. */
const optional = (ok: unknown[], near: unknown[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    { arbitrary: fc.constant(MISSING), weight: 3 },
    { arbitrary: fc.constantFrom(...ok), weight: 3 },
    { arbitrary: fc.constantFrom(...near), weight: 1 },
  );
const coding = optional(["br", "identity", "x-new", ""], [1, null, ["br"]]);
const decodedSize = optional([0, 65536, Number.MAX_SAFE_INTEGER], [-1, 1.5, "10", null]);
const change = fc.record({
  key: fc.constantFrom(...KEYS),
  to: fc.oneof(
    fc.constant("near" as const),
    fc.constant("any" as const),
    fc.constant("missing" as const),
  ),
  any: anyJson,
  seed: fc.nat(),
});

const answer = fc
  .tuple(
    valid,
    fc.array(change, { maxLength: 2 }),
    format,
    fc.oneof(anyJson, fc.constant(MISSING)),
    coding,
    decodedSize,
  )
  .chain(([base, changes, fmt, extra, ce, ds]) =>
    fc.tuple(...changes.map((c) => FIELDS[c.key]![1])).map((nears) => {
      const a: Record<string, unknown> = { ...base };
      changes.forEach((c, i) => {
        if (c.to === "missing") delete a[c.key];
        else a[c.key] = c.to === "near" ? nears[i] : c.any;
      });
      if (fmt !== MISSING) a.blob_format = fmt;
      if (extra !== MISSING) a.extra = extra;
      if (ce !== MISSING) a.content_encoding = ce;
      if (ds !== MISSING) a.decoded_size = ds;
      return a;
    }),
  );

void test("accepts exactly what GetBlobRetSchema accepts, on answers either side of the line", () => {
  let accepted = 0;
  let refused = 0;
  const runs = 20_000;
  fc.assert(
    fc.property(answer, (a) => {
      const ours = isGetBlobRet(a);
      assert.equal(ours, GetBlobRetSchema.safeParse(a).success, String(JSON.stringify(a)));
      if (ours) accepted++;
      else refused++;
    }),
    { numRuns: runs },
  );
  assert.ok(accepted > runs / 10, `accepted ${accepted} of ${runs}`);
  assert.ok(refused > runs / 10, `refused ${refused} of ${runs}`);
});

void test("non-objects are refused as the schema refuses them", () => {
  for (const v of [null, undefined, 1, "x", true, [], [1], () => undefined]) {
    assert.equal(isGetBlobRet(v), false);
    assert.equal(GetBlobRetSchema.safeParse(v).success, false);
  }
});

void test("a flat error answer is thrown typed, anything else malformed as InvalidResponseError", () => {
  assert.throws(
    () => parseBlobAnswer({ code: 4018, message: "Blob not accessible" }),
    ProtocolError,
  );
  assert.throws(() => parseBlobAnswer({ blob: "x" }), InvalidResponseError);
});
