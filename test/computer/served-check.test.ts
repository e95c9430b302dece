// @pure
/**
 * The served-bytes check (computer/blob/hash-cache.ts, D71): CRC-32 pieces joined
 * with the combine rule equal zlib's CRC-32 of the whole, in any serving order; overlaps are
 * ignored, a read starting again at 0 starts the coverage again, and a content whose bytes
 * changed under its cached digest is dropped from the hash cache once the served chunks cover it.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import zlib from "node:zlib";
import { Coverage, crc32Combine, HashCache } from "../../computer/blob/hash-cache.ts";

const crc = (b: Uint8Array): number => zlib.crc32(b);

void test("crc32Combine equals the CRC-32 of the concatenation", () => {
  for (const [a, b] of [
    [0, 1],
    [1, 0],
    [7, 65_536],
    [65_536, 12_345],
    [300_000, 1],
  ] as const) {
    const x = randomBytes(a);
    const y = randomBytes(b);
    assert.equal(crc32Combine(crc(x), crc(y), b), crc(Buffer.concat([x, y])), `${a}+${b}`);
  }
});

void test("a coverage joins pieces served in any order into the whole content's CRC-32", () => {
  const content = randomBytes(10 * 1000 + 7);
  const chunks = Array.from(
    { length: 11 },
    (_, i) => [i * 1000, Math.min(1000, content.length - i * 1000)] as const,
  );
  for (const order of [
    chunks,
    [...chunks].reverse(),
    [chunks[0]!, ...chunks.slice(1).sort((p, q) => ((p[0] * 7919) % 13) - ((q[0] * 7919) % 13))],
  ]) {
    const c = new Coverage(content.length);
    const results = order.map(([o, n]) => c.add(o, n, crc(content.subarray(o, o + n))));
    assert.deepEqual(results.slice(0, -1), Array(order.length - 1).fill(undefined));
    assert.equal(results.at(-1), crc(content));
  }
});

void test("overlapping pieces are ignored; a new read from offset 0 starts the coverage again", () => {
  const content = randomBytes(4000);
  const piece = (o: number, n: number): number => crc(content.subarray(o, o + n));
  const c = new Coverage(content.length);
  assert.equal(c.add(0, 1000, piece(0, 1000)), undefined);
  assert.equal(c.add(500, 1000, piece(500, 1000)), undefined, "overlap ignored");
  assert.equal(c.add(1000, 1000, piece(1000, 1000)), undefined);
  assert.equal(c.add(0, 1000, piece(0, 1000)), undefined, "a new read: coverage restarts");
  assert.equal(c.add(2000, 2000, piece(2000, 2000)), undefined, "the old pieces are gone");
  assert.equal(c.add(1000, 1000, piece(1000, 1000)), crc(content));
});

void test("the hash cache drops a digest whose served bytes show another content", () => {
  const cache = new HashCache({ pool: null });
  const old = randomBytes(3000);
  const sig = "1:2:3000:10:10";
  const digest = cache.fileBytesSha256(sig, old);
  // Served bytes equal to what was hashed: nothing happens.
  assert.equal(cache.served(sig, 0, old.subarray(0, 2000), 3000), false);
  assert.equal(cache.served(sig, 2000, old.subarray(2000), 3000), false);
  assert.equal(cache.size, 1);
  // The same signature, other bytes (written through a shared mmap): dropped when covered.
  const now = randomBytes(3000);
  assert.equal(cache.served(sig, 0, now.subarray(0, 1500), 3000), false);
  assert.equal(cache.served(sig, 1500, now.subarray(1500), 3000), true);
  assert.equal(cache.size, 0);
  assert.notEqual(cache.fileBytesSha256(sig, now), digest);
  // A digest recorded without the Computer reading the bytes is not checked.
  cache.record("9:9:3000:1:1", digest);
  assert.equal(cache.served("9:9:3000:1:1", 0, now, 3000), false);
});
