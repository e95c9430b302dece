// @pure
/**
 * The hash cache (D18): every chunk of a 64 MiB file is served with one hash computation (in the
 * piscina pool), concurrent first requests share it (single flight), and a rewrite — atomic
 * rename or in place — yields the new content's digest.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { openSync, renameSync, writeFileSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import type { GetBlobRet } from "../../protocol/index.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import { createComputerMetrics } from "../../computer/metrics.ts";
import { createHashPool } from "../../computer/workers/pool.ts";
import { hashComputations } from "../support/skills-fixtures.ts";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const pool = createHashPool(1)!;
const metrics = createComputerMetrics("pc-hash");
const cache = new HashCache({ pool, metrics });
const fx = engineFixture({ hashCache: cache, metrics });
after(async () => {
  await pool.close();
  fx.close();
});

const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

async function drain(handle: string): Promise<{ bytes: Buffer; digests: Set<string> }> {
  const parts: Buffer[] = [];
  const digests = new Set<string>();
  let offset = 0;
  for (;;) {
    const r = (await fx.engine.getBlob(
      blobReq(handle, { chunk_offset: offset, max_chunk_bytes: 2 ** 30 }),
    )) as GetBlobRet;
    assert.equal(typeof r.blob, "string", JSON.stringify(r).slice(0, 200));
    const chunk = Buffer.from(r.blob as string, "base64");
    parts.push(chunk);
    digests.add(r.sha256);
    offset += chunk.length;
    if (r.eof) break;
  }
  return { bytes: Buffer.concat(parts), digests };
}

async function poolComputations(): Promise<number> {
  const m = await metrics.hashComputations.get();
  return m.values.find((v) => v.labels.path === "pool")?.value ?? 0;
}

void test("all chunks of a 64 MiB file: hashed once, in the pool; a rewrite gets a new hash", async () => {
  const path = join(fx.dir, "big.bin");
  const content = randomBytes(64 * 1024 * 1024);
  writeFileSync(path, content);
  const handle = fx.fileHandle(path);
  const before = await hashComputations(metrics);

  const { bytes, digests } = await drain(handle);
  assert.ok(bytes.equals(content));
  assert.deepEqual([...digests], [sha(content)]);
  assert.equal((await hashComputations(metrics)) - before, 1, "one hash for ~90 chunks");
  assert.equal(await poolComputations(), 1, "the 64 MiB hash ran in the worker pool");

  // Atomic-rename rewrite: new inode → new signature → new digest, hashed once more.
  const next = randomBytes(2 * 1024 * 1024);
  writeFileSync(`${path}.tmp`, next);
  renameSync(`${path}.tmp`, path);
  const second = await drain(handle);
  assert.ok(second.bytes.equals(next));
  assert.deepEqual([...second.digests], [sha(next)]);
  assert.equal((await hashComputations(metrics)) - before, 2);

  // In-place write: same inode, new mtime/ctime → new digest.
  const fd = openSync(path, "r+");
  writeSync(fd, Buffer.from("patched"), 0, 7, 1000);
  closeSync(fd);
  next.write("patched", 1000);
  const third = await drain(handle);
  assert.ok(third.bytes.equals(next));
  assert.deepEqual([...third.digests], [sha(next)]);
  assert.equal((await hashComputations(metrics)) - before, 3);
});

void test("concurrent first requests for one uncached file share one computation", async () => {
  const path = join(fx.dir, "shared.bin");
  const content = randomBytes(8 * 1024 * 1024);
  writeFileSync(path, content);
  const handle = fx.fileHandle(path);
  const before = await hashComputations(metrics);
  const answers = (await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      fx.engine.getBlob(blobReq(handle, { chunk_offset: i * 4096, max_chunk_bytes: 4096 })),
    ),
  )) as GetBlobRet[];
  for (const a of answers) assert.equal(a.sha256, sha(content));
  assert.equal((await hashComputations(metrics)) - before, 1);
});

void test("small files are hashed inline; the LRU stays bounded", async () => {
  const smallMetrics = createComputerMetrics("pc-small");
  const small = new HashCache({ pool: null, maxEntries: 3, metrics: smallMetrics });
  const fxs = engineFixture({ hashCache: small });
  try {
    for (let i = 0; i < 5; i++) {
      const p = join(fxs.dir, `f${i}`);
      writeFileSync(p, `content ${i}`);
      const r = (await fxs.engine.getBlob(blobReq(fxs.fileHandle(p)))) as GetBlobRet;
      assert.equal(r.sha256, sha(Buffer.from(`content ${i}`)));
    }
    assert.equal(await hashComputations(smallMetrics), 5);
    assert.equal(small.size, 3);
  } finally {
    fxs.close();
  }
});

void test("inline hashing of several files at once gives each its own digest", async () => {
  const inlineMetrics = createComputerMetrics("pc-inline");
  const inline = new HashCache({ pool: null, metrics: inlineMetrics });
  const fxi = engineFixture({ hashCache: inline });
  try {
    const contents = Array.from({ length: 6 }, () => randomBytes(900_000));
    const handles = contents.map((c, i) => {
      const p = join(fxi.dir, `c${i}`);
      writeFileSync(p, c);
      return fxi.fileHandle(p);
    });
    const answers = (await Promise.all(
      handles.map((h) => fxi.engine.getBlob(blobReq(h, { max_chunk_bytes: 10 }))),
    )) as GetBlobRet[];
    answers.forEach((a, i) => assert.equal(a.sha256, sha(contents[i]!)));
    assert.equal(await hashComputations(inlineMetrics), 6);
  } finally {
    fxi.close();
  }
});
