// @pure
/**
 * The derived-resource store (computer/blob/derived.ts) on real files: one production per content
 * signature however many ask at once (in the real worker pool), the file tier bounded with the
 * least recently used evicted and made again on demand, the folder emptied at start, the memory
 * tier within its budget, and a too-large body refused before anything is written.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DerivedStore, type DeriveResult } from "../../computer/blob/derived.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import { createHashPool, type HashPool } from "../../computer/workers/pool.ts";
import { signatureOf } from "../../computer/blob/descriptors.ts";
import { versionBytes } from "./support/rewriter.ts";

const MiB = 1024 * 1024;
const FM = "---\nname: s\ndescription: d\n---\n";
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const limits = { maxBytes: 64 * MiB, inMemoryUpTo: 64 * 1024 };

let dir = "";
let pool: HashPool | null = null;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-derived-"));
  pool = createHashPool(1);
});
after(async () => {
  await pool?.close();
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
/** A SKILL.md with a body of `size` bytes (version `v`) at a fresh path. */
function skillMd(size: number, v = 0): { path: string; body: Buffer } {
  const body = versionBytes(v, size);
  const path = join(dir, `f${n++}.md`);
  writeFileSync(path, Buffer.concat([Buffer.from(FM), body]));
  return { path, body };
}

async function store(extra: { maxBytes?: number; memoryBytes?: number } = {}) {
  const hashes = new HashCache({ pool });
  const s = await DerivedStore.open({
    dir: join(dir, `store${n++}`),
    hashes,
    pool,
    settleMs: 0,
    ...extra,
  });
  return { s, hashes };
}

function derived(r: DeriveResult) {
  assert.ok(r.ok, JSON.stringify(r));
  return r.derived;
}

void test("32 concurrent gets of one new signature share one production in the pool", async () => {
  const { s, hashes } = await store();
  const { path, body } = skillMd(8 * MiB);
  const all = await Promise.all(Array.from({ length: 32 }, () => s.get(path, "skill-md", limits)));
  const first = derived(all[0]!);
  assert.ok("path" in first);
  for (const r of all) assert.deepEqual(derived(r), first);
  assert.equal(s.productions.file, 1);
  assert.equal(first.sha256, sha(body));
  assert.ok(readFileSync(first.path).equals(body));
  // The file's signature was recorded for the engine: its content is known without a hash.
  const st = (await import("node:fs")).statSync(first.path, { bigint: true });
  assert.equal(await hashes.fileSha256(-1, signatureOf(st), Number(st.size)), sha(body));
});

void test("the file tier keeps its bound: the least recently used goes and is made again on demand", async () => {
  const { s } = await store({ maxBytes: 5 * MiB });
  const a = skillMd(2 * MiB, 1);
  const b = skillMd(2 * MiB, 2);
  const c = skillMd(2 * MiB, 3);
  const da = derived(await s.get(a.path, "skill-md", limits));
  derived(await s.get(b.path, "skill-md", limits));
  derived(await s.get(a.path, "skill-md", limits)); // a is now the most recently used
  derived(await s.get(c.path, "skill-md", limits)); // over the bound: b goes
  assert.equal(s.bytes.files, 4 * MiB);
  assert.equal(s.productions.file, 3);
  await new Promise((resolve) => setTimeout(resolve, 50)); // the removal is asynchronous
  assert.deepEqual(readdirSync(s.dir).sort(), [sha(a.body), sha(c.body)].sort());
  assert.ok("path" in da && existsSync(da.path));
  const again = derived(await s.get(b.path, "skill-md", limits));
  assert.equal(s.productions.file, 4);
  assert.equal(again.sha256, sha(b.body));
});

void test("the folder is emptied at start: files of an earlier run are never reachable", async () => {
  const folder = join(dir, `stale${n++}`);
  mkdirSync(folder);
  writeFileSync(join(folder, "0".repeat(64)), "stale");
  writeFileSync(join(folder, ".tmp-dead"), "half");
  await DerivedStore.open({ dir: folder, hashes: new HashCache({ pool: null }), pool: null });
  assert.equal(existsSync(folder), false);
});

void test("small bodies stay in memory within the budget", async () => {
  const { s } = await store({ memoryBytes: 100 * 1024 });
  for (let i = 0; i < 10; i++) {
    const { path, body } = skillMd(30 * 1024, i);
    const d = derived(await s.get(path, "skill-md", limits));
    assert.ok("bytes" in d && d.bytes.equals(body));
  }
  assert.equal(s.productions.memory, 10);
  assert.ok(s.bytes.memory <= 100 * 1024, `${s.bytes.memory} bytes in memory`);
  assert.equal(s.bytes.files, 0);
});

void test("a body over the cap is too_large, with its size, and nothing is written", async () => {
  const { s } = await store();
  const { path } = skillMd(3 * MiB);
  const r = await s.get(path, "skill-md", { ...limits, maxBytes: 2 * MiB });
  assert.deepEqual(r, { ok: false, reason: "too_large", size: 3 * MiB });
  assert.equal(existsSync(s.dir) ? readdirSync(s.dir).length : 0, 0);
});
