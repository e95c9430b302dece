/**
 * Generators of hostile payloads (fast-check) for the reliability suite: wrong types, missing
 * fields, huge strings and numbers, deep objects, prototype keys, lone surrogates, invalid UTF-8
 * bytes, Buffers where text is expected; whole-payload garbage and one-field mutations of a valid
 * request (so the garbage reaches past the first check).
 */
import fc from "fast-check";

/** `{"a":{"a":...}}` nested `depth` levels. */
export function deepObject(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** `[[[...]]]` nested `depth` levels. */
function deepArray(depth: number): unknown {
  let v: unknown = [];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** Own `__proto__` / `constructor` keys, as JSON.parse builds them from a peer's bytes. */
const PROTO_PAYLOADS: unknown[] = [
  JSON.parse('{"__proto__":{"polluted":"yes"},"agent":"a","req_id":"r","computer":"pc"}'),
  JSON.parse('{"constructor":{"prototype":{"polluted":"yes"}},"computer":"pc"}'),
  JSON.parse('{"__proto__":null}'),
  JSON.parse('{"toString":1,"valueOf":"x","hasOwnProperty":null}'),
];

const WEIRD_STRINGS = [
  "",
  " ",
  "..",
  "../../../../etc/passwd",
  "/etc/passwd",
  ".skillenv",
  "SKILL.md",
  "\u0000",
  "\ud800",
  "\udfff\ud800x",
  "\uffff\ufffe",
  "%2e%2e%2f%2e%2e%2f",
  "C:\\Windows\\win.ini",
  "__proto__",
  "constructor",
  "alpha",
  "pc",
  "rel-office",
  "a".repeat(129),
];

const smallLeaf: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom(...WEIRD_STRINGS), weight: 4 },
  {
    arbitrary: fc.constantFrom(
      null,
      undefined,
      true,
      false,
      0,
      -1,
      -0,
      1.5,
      NaN,
      Infinity,
      -Infinity,
      1e308,
      -1e308,
      Number.MAX_SAFE_INTEGER + 2,
      2 ** 31,
      2 ** 32 + 1,
    ),
    weight: 4,
  },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 3 },
  { arbitrary: fc.double(), weight: 1 },
  { arbitrary: fc.integer(), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), weight: 2 },
  { arbitrary: fc.constant(Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80])), weight: 1 },
  { arbitrary: fc.integer({ min: 50, max: 1_000 }).map(deepObject), weight: 1 },
  { arbitrary: fc.integer({ min: 50, max: 1_000 }).map(deepArray), weight: 1 },
  { arbitrary: fc.constantFrom(...PROTO_PAYLOADS), weight: 2 },
);

// Huge strings only as a leaf of their own (never inside containers): three of them stay under the
// Server's 1 MB frame limit; above it the frame itself is refused and the socket dropped, by design.
const leaf: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: smallLeaf, weight: 30 },
  { arbitrary: fc.integer({ min: 10_000, max: 250_000 }).map((n) => "x".repeat(n)), weight: 1 },
);

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: leaf, weight: 6 },
  { arbitrary: fc.array(smallLeaf, { maxLength: 5 }), weight: 1 },
  {
    arbitrary: fc.dictionary(
      fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom(...WEIRD_STRINGS)),
      smallLeaf,
      {
        maxKeys: 5,
      },
    ),
    weight: 2,
  },
);

export interface HostileCase {
  /** Arguments before the ack (payload first, then any extra arguments). */
  args: unknown[];
  /** Whether an ack callback is sent. */
  ack: boolean;
}

/** One-field mutation (set to a hostile value, delete, or add an extra field) of `base`. */
function mutate(base: Record<string, unknown>, key: string, value: unknown, op: string): unknown {
  const out: Record<string, unknown> = { ...base };
  if (op === "delete") delete out[key];
  // defineProperty: an own `__proto__` key, as JSON.parse on the receiving side builds it.
  else
    Object.defineProperty(out, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

/** `n` hostile cases for an event whose valid request is `base` (deterministic by `seed`). */
export function hostileCases(
  base: Record<string, unknown>,
  n: number,
  seed: number,
): HostileCase[] {
  const keys = [...Object.keys(base), "extra", "__proto__"];
  const payload = fc.oneof(
    { arbitrary: hostileValue, weight: 2 },
    {
      arbitrary: fc
        .tuple(fc.constantFrom(...keys), hostileValue, fc.constantFrom("set", "set", "delete"))
        .map(([k, v, op]) => mutate(base, k, v, op)),
      weight: 3,
    },
  );
  return fc
    .sample(
      fc.record({
        payload,
        extra: fc.array(hostileValue, { maxLength: 2 }),
        ack: fc.integer({ min: 0, max: 9 }).map((n) => n !== 0),
      }),
      { numRuns: n, seed },
    )
    .map((c) => ({ args: [c.payload, ...c.extra], ack: c.ack }));
}
