/**
 * The tool blob spool (D24) and the `tool` producer: concurrent identical puts, LRU eviction under
 * the bound (then `gone`), restart survival, atomic writes (leftover temp files are never served
 * and are cleaned at start), cid validation before any path is built.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { BlobEngine } from "../../../computer/blob/engine.ts";
import { HandleCodec } from "../../../computer/blob/handle.ts";
import { HashCache } from "../../../computer/blob/hash-cache.ts";
import { createToolProducer, mintToolHandle } from "../../../computer/tools/producer.ts";
import { BlobSpool } from "../../../computer/tools/spool.ts";
import type { GetBlobRet } from "../../../protocol/index.ts";
import { quietLog } from "../../support/tools-harness.ts";

const root = mkdtempSync(join(tmpdir(), "a2c-spool-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `s${n++}`);
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

function engineFor(spool: BlobSpool, key = randomBytes(32)) {
  const engine = new BlobEngine({
    codec: new HandleCodec(key),
    hashCache: new HashCache({ pool: null }),
    maxHttpBufferSize: 1_000_000,
  });
  engine.register(createToolProducer(spool));
  const get = (handle: string) =>
    engine.getBlob({ agent: "a", req_id: `r${n++}`, computer: "c", blob_handle: handle });
  return { engine, get };
}

void test("concurrent identical puts store one blob and agree on the cid", async () => {
  const spool = await BlobSpool.open({ dir: freshDir(), log: quietLog });
  const bytes = randomBytes(300_000);
  const cids = await Promise.all(Array.from({ length: 16 }, () => spool.put(bytes)));
  assert.ok(cids.every((c) => c === sha(bytes)));
  assert.equal(spool.count, 1);
  assert.equal(spool.totalBytes, bytes.length);
  assert.deepEqual(readdirSync(spool.dir), [sha(bytes)], "no temp files left behind");
});

void test("two spools on one directory racing on the same content both succeed", async () => {
  const dir = freshDir();
  const [a, b] = await Promise.all([
    BlobSpool.open({ dir, log: quietLog }),
    BlobSpool.open({ dir, log: quietLog }),
  ]);
  const bytes = randomBytes(100_000);
  const [ca, cb] = await Promise.all([a.put(bytes), b.put(bytes)]);
  assert.equal(ca, cb);
  assert.ok(await a.locate(ca));
  assert.deepEqual(readdirSync(dir), [ca]);
});

void test("LRU eviction keeps the total under the bound; an evicted blob is gone", async () => {
  const spool = await BlobSpool.open({ dir: freshDir(), maxBytes: 250_000, log: quietLog });
  const { engine, get } = engineFor(spool);
  const blobs = [randomBytes(100_000), randomBytes(100_000), randomBytes(100_000)];
  const c0 = await spool.put(blobs[0]!);
  const c1 = await spool.put(blobs[1]!);
  // Use blob 0 so that blob 1 is now least recently used.
  const h0 = mintToolHandle(engine, c0, "image/png");
  const h1 = mintToolHandle(engine, c1, "image/png");
  assert.equal(((await get(h0)) as GetBlobRet).sha256, c0);
  const c2 = await spool.put(blobs[2]!);
  assert.ok(spool.totalBytes <= 250_000);
  assert.equal(spool.count, 2);
  assert.ok(spool.has(c0) && spool.has(c2) && !spool.has(c1));
  const gone = await get(h1);
  assert.deepEqual((gone as { details?: unknown }).details, { reason: "gone" });
  assert.equal((gone as { code?: number }).code, 4018);
  assert.ok(!readdirSync(spool.dir).includes(c1), "evicted file removed from disk");
});

void test("a blob larger than the whole bound is refused, not stored", async () => {
  const spool = await BlobSpool.open({ dir: freshDir(), maxBytes: 1000, log: quietLog });
  await assert.rejects(spool.put(randomBytes(1001)), { name: "SpoolFullError" });
  assert.equal(spool.count, 0);
});

void test("handles survive a restart; the index is rebuilt from disk", async () => {
  const dir = freshDir();
  const key = randomBytes(32);
  const bytes = randomBytes(150_000);
  const first = await BlobSpool.open({ dir, log: quietLog });
  const cid = await first.put(bytes);
  const handle = mintToolHandle(engineFor(first, key).engine, cid, "audio/wav");

  const second = await BlobSpool.open({ dir, log: quietLog });
  assert.equal(second.count, 1);
  assert.equal(second.totalBytes, bytes.length);
  const ret = (await engineFor(second, key).get(handle)) as GetBlobRet;
  assert.equal(ret.sha256, cid);
  assert.equal(ret.mime_type, "audio/wav");
  assert.equal(ret.total_size, bytes.length);
});

void test("a crash mid-write leaves only a temp file: never served, removed at start", async () => {
  const dir = freshDir();
  const spool = await BlobSpool.open({ dir, log: quietLog });
  const bytes = randomBytes(50_000);
  const cid = sha(bytes);
  // What a crash between write and rename leaves behind: a partial temp file.
  writeFileSync(join(dir, ".tmp-deadbeefdeadbeef"), bytes.subarray(0, 1000));
  const key = randomBytes(32);
  const { engine, get } = engineFor(spool, key);
  const handle = mintToolHandle(engine, cid, "application/octet-stream");
  assert.equal(((await get(handle)) as { details?: { reason?: string } }).details?.reason, "gone");

  const reopened = await BlobSpool.open({ dir, log: quietLog });
  assert.deepEqual(readdirSync(dir), [], "temp file cleaned at start");
  assert.equal(reopened.count, 0);
  // The real put afterwards works and serves the full bytes.
  assert.equal(await reopened.put(bytes), cid);
  const ret = (await engineFor(reopened, key).get(handle)) as GetBlobRet;
  assert.equal(ret.sha256, cid);
  assert.ok(Buffer.from(ret.blob as string, "base64").equals(bytes));
});

void test("the producer validates the cid and mime before building any path", async () => {
  const spool = await BlobSpool.open({ dir: freshDir(), log: quietLog });
  const producer = createToolProducer(spool);
  const cid = await spool.put(Buffer.from("hello"));
  const bad: Record<string, string | number>[] = [
    { cid: "../../etc/passwd", mime: "text/plain" },
    { cid: cid.toUpperCase(), mime: "text/plain" },
    { cid: `${cid}/x`, mime: "text/plain" },
    { cid, mime: "" },
    { cid, mime: "bad\nmime" },
    { cid: 12, mime: "text/plain" },
    { other: cid },
  ];
  for (const fields of bad) {
    assert.equal(await producer.resolve(fields), null, JSON.stringify(fields));
  }
  const ok = await producer.resolve({ cid, mime: "text/plain" });
  assert.ok(ok?.ok);
  assert.ok(ok.source.type === "file");
  const { discard, ...where } = ok.source;
  assert.deepEqual(where, {
    type: "file",
    path: join(spool.dir, cid),
    mimeType: "text/plain",
    sha256: cid,
  });
  assert.equal(typeof discard, "function");
  assert.deepEqual(await producer.resolve({ cid: sha(Buffer.from("absent")), mime: "a/b" }), {
    ok: false,
    reason: "gone",
  });
});
