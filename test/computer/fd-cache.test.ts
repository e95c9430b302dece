// @pure
/**
 * The descriptor cache's lifetime rules: a descriptor is never closed while a reader holds it,
 * an invalidated one closes when its last reader lets go, idle ones close on the sweep, and
 * close() leaves nothing open.
 */
import assert from "node:assert/strict";
import { fstatSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { FdCache } from "../../computer/blob/descriptors.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-fdcache-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, "f");
writeFileSync(file, "x");

void test("held descriptors survive invalidation until released; idle ones are swept", () => {
  const cache = new FdCache(2, 60_000);
  const a = cache.adopt(openSync(file, "r"), file, "sig");
  assert.equal(cache.acquire(file), a); // second reader
  cache.invalidate(a);
  assert.equal(cache.acquire(file), undefined);
  cache.release(a);
  fstatSync(a.fd); // one reader left: still open
  cache.release(a);
  assert.equal(cache.open, 0);

  const b = cache.adopt(openSync(file, "r"), file, "sig");
  cache.release(b);
  assert.equal(cache.open, 1);
  cache.sweepIdle(performance.now() + 120_000);
  assert.equal(cache.open, 0);
  assert.equal(cache.acquire(file), undefined);
  cache.close();
});

void test("bounded: the least recently used idle descriptor is closed first; close() empties it", () => {
  const cache = new FdCache(2, 60_000);
  const paths = ["p1", "p2", "p3"].map((p) => join(dir, p));
  const entries = paths.map((p) => {
    writeFileSync(p, p);
    const e = cache.adopt(openSync(p, "r"), p, "sig");
    cache.release(e);
    return e;
  });
  assert.equal(cache.open, 2);
  assert.equal(cache.acquire(paths[0]!), undefined, "the oldest was closed");
  const kept = cache.acquire(paths[2]!);
  assert.equal(kept, entries[2]);
  cache.close();
  assert.equal(cache.open, 1, "a held descriptor closes on release, not under its reader");
  cache.release(kept!);
  assert.equal(cache.open, 0);
});
