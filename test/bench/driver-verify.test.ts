// @pure
// The windowed driver accepts exactly the right bytes: a wrong offset, a flipped byte, a short
// chunk or a wrong reported sha256 is an IntegrityError, never a data point.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drive, type Chunk, type FetchChunk } from "../../bench/lib/driver.ts";
import { fileDigests, writeContent } from "../../bench/lib/data.ts";
import { IntegrityError } from "../../bench/lib/integrity.ts";

const dir = mkdtempSync(join(tmpdir(), "bench-driver-"));
const path = join(dir, "r.bin");
const size = 1024 * 1024 + 12345;
writeContent(path, "driver", size);
const bytes = readFileSync(path);
const chunkBytes = 64 * 1024;
const d = fileDigests(path, chunkBytes);
test.after(() => rmSync(dir, { recursive: true, force: true }));

function fetcher(mutate: (c: Chunk) => Chunk = (c) => c): FetchChunk {
  return async (offset, n) =>
    mutate({
      offset,
      bytes: Buffer.from(bytes.subarray(offset, offset + n)),
      sha256: d.sha256,
      totalSize: size,
      eof: offset + n >= size,
    });
}

const opts = {
  totalSize: size,
  sha256: d.sha256,
  chunkBytes,
  window: 4,
  durationMs: 0,
  chunkDigests: d.chunks,
};

void test("right bytes: every chunk of two passes is counted, in any completion order", async () => {
  const r = await drive(fetcher(), { ...opts, maxChunks: 2 * d.chunks.length });
  assert.equal(r.chunks, 2 * d.chunks.length);
  assert.equal(r.bytes, 2 * size);
  assert.equal(r.passes, 2);
});

const bad: Array<[string, (c: Chunk) => Chunk]> = [
  [
    "a flipped byte",
    (c) =>
      c.offset === chunkBytes * 3 ? { ...c, bytes: Buffer.from(c.bytes).fill(0, 100, 101) } : c,
  ],
  [
    "a chunk placed at another offset",
    (c) => (c.offset === chunkBytes * 2 ? { ...c, offset: chunkBytes } : c),
  ],
  ["a short chunk", (c) => (c.offset === chunkBytes ? { ...c, bytes: c.bytes.subarray(1) } : c)],
  ["another reported sha256", (c) => ({ ...c, sha256: "0".repeat(64) })],
  ["a wrong eof", (c) => (c.offset === 0 ? { ...c, eof: true } : c)],
];
for (const [what, mutate] of bad) {
  void test(`${what} fails the point with an IntegrityError`, async () => {
    await assert.rejects(
      drive(fetcher(mutate), { ...opts, maxChunks: d.chunks.length }),
      IntegrityError,
    );
  });
}
