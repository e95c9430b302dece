// @pure
// D7 stays the schema's decision: the zod-free check of a get_blob payload (the per-chunk hot path
// of the Server's relay and the Computer's dispatch) only ever accepts what GetBlobReqSchema
// accepts, and it does accept the usual request.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { GetBlobReqSchema, plainGetBlob } from "../../protocol/index.ts";

void test("a usual get_blob request takes the fast path", () => {
  const req = {
    agent: "agent-1",
    req_id: "r-1",
    computer: "pc-1",
    blob_handle: "h".repeat(98),
    chunk_offset: 65536,
    max_chunk_bytes: 65536,
    blob_format: "binary",
    content_encoding: ["br", "gzip"],
    x_extension: { kept: true },
  };
  assert.equal(plainGetBlob(req), true);
  assert.equal(plainGetBlob({ ...req, chunk_offset: undefined, blob_format: undefined }), true);
  assert.equal(plainGetBlob({ ...req, content_encoding: "gzip" }), true);
  assert.equal(plainGetBlob({ ...req, content_encoding: [] }), true);
});

void test("content_encoding: a token or up to 8 tokens of 1-32 characters, unknown ones included", () => {
  const base = { agent: "a", req_id: "r", computer: "c", blob_handle: "h" };
  const ok = [
    ["br"],
    "x-future",
    ["zstd", "br", "identity"],
    Array(8).fill("br"),
    ["a".repeat(32)],
  ];
  const bad = [[""], "", Array(9).fill("br"), ["a".repeat(33)], [1], [null], { br: 1 }, 7, null];
  for (const v of ok) {
    assert.equal(plainGetBlob({ ...base, content_encoding: v }), true, JSON.stringify(v));
    assert.ok(GetBlobReqSchema.safeParse({ ...base, content_encoding: v }).success);
  }
  for (const v of bad) {
    assert.equal(plainGetBlob({ ...base, content_encoding: v }), false, JSON.stringify(v));
    assert.equal(GetBlobReqSchema.safeParse({ ...base, content_encoding: v }).success, false);
  }
});

void test("whatever the fast path accepts, the schema accepts", () => {
  const field = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.string({ maxLength: 5 }),
    fc.constantFrom(
      "",
      "a",
      "a".repeat(256),
      "a".repeat(257),
      "a".repeat(4097),
      "base64",
      "binary",
      "br",
    ),
    fc.integer(),
    fc.double(),
    fc.constantFrom(-0, 2 ** 53, 1.5, Number.NaN, Number.POSITIVE_INFINITY),
    fc.boolean(),
    fc.array(fc.string(), { maxLength: 2 }),
    fc.array(fc.constantFrom("br", "gzip", "", "a".repeat(33), 1), { maxLength: 10 }),
    fc.object({ maxDepth: 1 }),
  );
  // Mostly valid fields, each sometimes replaced by anything, so both sides of the check run.
  const or = (valid: unknown): fc.Arbitrary<unknown> =>
    fc.oneof({ arbitrary: fc.constant(valid), weight: 6 }, { arbitrary: field, weight: 1 });
  const payload = fc.oneof(
    { arbitrary: fc.anything(), weight: 1 },
    {
      weight: 4,
      arbitrary: fc.record(
        {
          agent: or("agent-1"),
          req_id: or("r-1"),
          computer: or("pc-1"),
          blob_handle: or("handle"),
          chunk_offset: or(0),
          max_chunk_bytes: or(65536),
          blob_format: or("base64"),
          content_encoding: or(["br", "gzip"]),
        },
        { requiredKeys: ["agent", "req_id", "computer", "blob_handle"] },
      ),
    },
  );
  let fast = 0;
  fc.assert(
    fc.property(payload, (p) => {
      if (!plainGetBlob(p)) return;
      fast += 1;
      assert.ok(GetBlobReqSchema.safeParse(p).success, JSON.stringify(p));
    }),
    { numRuns: 20_000 },
  );
  assert.ok(fast > 0, "the generator reached the fast path");
});
