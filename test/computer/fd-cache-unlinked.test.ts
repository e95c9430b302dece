// @pure
/**
 * The descriptor cache never keeps a file whose last name is gone (computer/blob/descriptors.ts):
 * after a cached file is deleted or renamed over, the next request (for any file) leaves no
 * descriptor of this process on it, so its disk space is freed. And the cache holds no more
 * descriptors than its bound. Real files, counted in /proc/self/fd.
 */
import assert from "node:assert/strict";
import {
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const fx = engineFixture({ fdCacheEntries: 3 });
after(async () => {
  await fx.engine.close();
  fx.close();
});

/** What this process's descriptors point at, for those under the fixture's directory. */
function openUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed while listing (the readdir's own descriptor)
    }
  }
  return out;
}

/** A fresh directory per test, so each one counts only its own files. */
function folder(name: string): string {
  const dir = join(fx.dir, name);
  mkdirSync(dir);
  return dir;
}

function file(dir: string, name: string, content = name.repeat(64)) {
  const path = join(dir, name);
  writeFileSync(path, content);
  return { path, handle: fx.fileHandle(path) };
}

async function pull(handle: string): Promise<void> {
  const r = await fx.engine.getBlob(blobReq(handle, { max_chunk_bytes: 16 }));
  assert.ok(!("code" in r), JSON.stringify(r));
}

void test("a cached file deleted: no descriptor on it after the next request", async () => {
  const dir = folder("deleted");
  const a = file(dir, "a.bin");
  const b = file(dir, "b.bin");
  await pull(a.handle);
  assert.deepEqual(openUnder(dir), [a.path], "cached between chunks");
  unlinkSync(a.path);
  await pull(b.handle);
  assert.deepEqual(openUnder(dir), [b.path]);
});

void test("a cached file renamed over: the old content's descriptor is closed", async () => {
  const dir = folder("replaced");
  const a = file(dir, "a.bin", "old".repeat(100));
  const b = file(dir, "b.bin");
  await pull(a.handle);
  writeFileSync(`${a.path}.tmp`, "new".repeat(100));
  renameSync(`${a.path}.tmp`, a.path);
  assert.deepEqual(openUnder(dir), [`${a.path} (deleted)`], "still held before a request");
  await pull(b.handle);
  assert.deepEqual(openUnder(dir), [b.path]);
  await pull(a.handle); // the new content is served and cached in its turn
  assert.deepEqual(openUnder(dir).sort(), [a.path, b.path].sort());
});

void test("the cache never holds more descriptors than its bound", async () => {
  const dir = folder("many");
  const files = Array.from({ length: 10 }, (_, i) => file(dir, `${i}.bin`));
  for (const f of files) await pull(f.handle);
  const open = openUnder(dir);
  assert.equal(open.length, 3, open.join("\n"));
  assert.deepEqual(
    open.sort(),
    files
      .slice(-3)
      .map((f) => f.path)
      .sort(),
    "the most recent",
  );
  // Pulled all at once (chunks this big are read off the main thread, so the reads overlap),
  // more are open while they are read; once released, the bound holds again.
  const big = Array.from({ length: 10 }, (_, i) => file(dir, `big-${i}.bin`, "z".repeat(300_000)));
  await Promise.all(
    big.map((f) => fx.engine.getBlob(blobReq(f.handle, { max_chunk_bytes: 300_000 }))),
  );
  assert.ok(openUnder(dir).length <= 3);
});
