// @pure
/**
 * `client:get_blob` behaviour (protocol.md §6.2–§6.7; D15–D19): every 4018 reason,
 * offsets, `max_chunk_bytes` clamping, empty resources, idempotence, any-order offsets, binary
 * carriage. Real files in a temp dir, real producer, real engine.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { CLIENT_REQUEST_SCHEMAS, encodedAckBytes, type GetBlobRet } from "../../protocol/index.ts";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const fx = engineFixture();
after(() => fx.close());

const data = randomBytes(300_000);
const dataPath = join(fx.dir, "data.bin");
writeFileSync(dataPath, data);
const sha = createHash("sha256").update(data).digest("hex");
const handle = fx.fileHandle(dataPath, "image/png");

async function ok(extra: Record<string, unknown> = {}, h = handle): Promise<GetBlobRet> {
  const ret = await fx.engine.getBlob(blobReq(h, extra));
  assert.ok(!("code" in ret), `unexpected error ${JSON.stringify(ret)}`);
  return ret;
}

async function reason(extra: Record<string, unknown>, h = handle): Promise<unknown> {
  const ret = await fx.engine.getBlob(blobReq(h, extra));
  assert.equal((ret as { code?: number }).code, 4018, JSON.stringify(ret));
  assert.equal((ret as { message?: string }).message, "Blob not accessible");
  return (ret as unknown as { details: { reason: string } }).details.reason;
}

const decode = (r: GetBlobRet): Buffer =>
  typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : Buffer.from(r.blob);

void describe("4018 reasons", () => {
  void test("garbage handles are invalid_handle", async () => {
    for (const h of ["xyz", "", "A".repeat(40), handle.slice(0, -1), `${handle}A`]) {
      assert.equal(await reason({}, h), "invalid_handle");
    }
  });

  void test("a handle of a kind with no producer is invalid_handle", async () => {
    assert.equal(await reason({}, fx.codec.seal("skill", { id: "r0" })), "invalid_handle");
  });

  void test("fields the producer does not recognise are invalid_handle", async () => {
    assert.equal(await reason({}, fx.codec.seal("tool", { other: 1 })), "invalid_handle");
  });

  void test("revoked authorization is forbidden, removal and deleted files are gone", async () => {
    const p = join(fx.dir, "revoke.bin");
    writeFileSync(p, "abc");
    const id = fx.producer.addFile(p);
    const h = fx.engine.mint("tool", { id });
    await ok({}, h);
    fx.producer.revoke(id);
    assert.equal(await reason({}, h), "forbidden");

    const p2 = join(fx.dir, "delete.bin");
    writeFileSync(p2, "abc");
    const h2 = fx.fileHandle(p2);
    unlinkSync(p2);
    assert.equal(await reason({}, h2), "gone");

    const id3 = fx.producer.addBytes(Buffer.from("x"));
    const h3 = fx.engine.mint("tool", { id: id3 });
    fx.producer.remove(id3);
    assert.equal(await reason({}, h3), "gone");
  });

  void test("a directory where the file was is gone", async () => {
    assert.equal(await reason({}, fx.fileHandle(fx.dir)), "gone");
  });

  void test("order: forbidden wins over range (D15)", async () => {
    const id = fx.producer.addBytes(Buffer.from("abc"));
    const h = fx.engine.mint("tool", { id });
    fx.producer.revoke(id);
    assert.equal(await reason({ chunk_offset: -1 }, h), "forbidden");
  });
});

void describe("offsets", () => {
  void test("offset absent = 0, middle, total_size (empty eof)", async () => {
    const first = await ok();
    assert.equal(first.chunk_offset, 0);
    assert.equal(first.total_size, data.length);
    assert.equal(first.sha256, sha);
    assert.equal(first.mime_type, "image/png");
    assert.equal(first.blob_handle, handle);
    assert.deepEqual(decode(first), data.subarray(0, decode(first).length));
    const mid = await ok({ chunk_offset: 123_457, max_chunk_bytes: 1000 });
    assert.deepEqual(decode(mid), data.subarray(123_457, 124_457));
    assert.equal(mid.eof, false);
    const end = await ok({ chunk_offset: data.length });
    assert.equal(end.blob, "");
    assert.equal(end.eof, true);
    assert.equal(end.sha256, sha);
  });

  void test("total_size + 1 and -1 are range", async () => {
    assert.equal(await reason({ chunk_offset: data.length + 1 }), "range");
    assert.equal(await reason({ chunk_offset: -1 }), "range");
  });

  void test("non-integer offsets and limits fail the schema (400 at dispatch)", () => {
    const schema = CLIENT_REQUEST_SCHEMAS["client:get_blob"];
    assert.equal(schema.safeParse(blobReq(handle, { chunk_offset: 1.5 })).success, false);
    assert.equal(schema.safeParse(blobReq(handle, { max_chunk_bytes: 2.5 })).success, false);
    assert.equal(schema.safeParse(blobReq(handle, { max_chunk_bytes: "10" })).success, false);
  });

  void test("last chunk sets eof exactly", async () => {
    const last = await ok({ chunk_offset: data.length - 10, max_chunk_bytes: 10 });
    assert.equal(last.eof, true);
    const before = await ok({ chunk_offset: data.length - 11, max_chunk_bytes: 10 });
    assert.equal(before.eof, false);
  });
});

void describe("max_chunk_bytes", () => {
  void test("absent, 0 and negative give the Computer default (90 KiB)", async () => {
    for (const extra of [{}, { max_chunk_bytes: 0 }, { max_chunk_bytes: -5 }]) {
      assert.equal(decode(await ok(extra)).length, 90 * 1024);
    }
  });

  void test("1 gives one byte; 10 gives at most 10", async () => {
    assert.deepEqual(
      decode(await ok({ max_chunk_bytes: 1, chunk_offset: 7 })),
      data.subarray(7, 8),
    );
    assert.equal(decode(await ok({ max_chunk_bytes: 10 })).length, 10);
  });

  void test("huge is clamped so the serialized ack fits maxHttpBufferSize", async () => {
    const big = randomBytes(3_000_000);
    const h = fx.bytesHandle(big);
    const r = await ok({ max_chunk_bytes: 2 ** 40 }, h);
    const n = decode(r).length;
    assert.ok(n > 700_000 && n < 750_000, `chunk ${n}`);
    assert.ok(encodedAckBytes(r) <= 1_000_000);
    // Exact: one more byte (in base64, three) would not fit.
    assert.ok(
      encodedAckBytes({ ...r, blob: big.subarray(0, n + 3).toString("base64") }) > 1_000_000,
    );
  });

  void test("the clamp holds for the longest req_id and handle the schema allows", async () => {
    const r = await ok({ max_chunk_bytes: 2 ** 40, req_id: "é".repeat(256) });
    assert.ok(encodedAckBytes(r) <= 1_000_000);
  });
});

void describe("empty resources", () => {
  void test("empty file and empty bytes: one answer total_size 0, eof, blob ''", async () => {
    const p = join(fx.dir, "empty.bin");
    writeFileSync(p, "");
    for (const h of [fx.fileHandle(p), fx.bytesHandle(Buffer.alloc(0))]) {
      const r = await ok({}, h);
      assert.equal(r.total_size, 0);
      assert.equal(r.eof, true);
      assert.equal(r.blob, "");
      assert.equal(r.sha256, createHash("sha256").digest("hex"));
      assert.equal(await reason({ chunk_offset: 1 }, h), "range");
    }
  });
});

void describe("statelessness", () => {
  void test("the same request twice gives identical answers", async () => {
    const req = blobReq(handle, { chunk_offset: 5000, max_chunk_bytes: 7000 });
    assert.deepEqual(await fx.engine.getBlob(req), await fx.engine.getBlob(req));
  });

  void test("offsets interleaved in any order, concurrently, reassemble the source", async () => {
    const size = 4096;
    const offsets = Array.from({ length: Math.ceil(data.length / size) }, (_, i) => i * size);
    // A fixed permutation (deterministic): stride through the offsets by a prime.
    const n = offsets.length;
    offsets.sort((a, b) => (((a / size) * 7919) % n) - (((b / size) * 7919) % n));
    const out = Buffer.alloc(data.length);
    const answers = await Promise.all(
      offsets.map((o) => ok({ chunk_offset: o, max_chunk_bytes: size })),
    );
    for (const a of answers) {
      assert.equal(a.sha256, sha);
      decode(a).copy(out, a.chunk_offset);
    }
    assert.deepEqual(out, data);
    assert.equal(answers.filter((a) => a.eof).length, 1);
  });
});

void describe("binary carriage (D19)", () => {
  void test("blob_format binary returns a Buffer and echoes the format", async () => {
    const r = await ok({ blob_format: "binary", chunk_offset: 10, max_chunk_bytes: 100 });
    assert.ok(Buffer.isBuffer(r.blob));
    assert.equal(r.blob_format, "binary");
    assert.deepEqual(r.blob, data.subarray(10, 110));
    const b = fx.bytesHandle(Buffer.from("hello"));
    const rb = await ok({ blob_format: "binary" }, b);
    assert.deepEqual(Buffer.from(rb.blob as Uint8Array), Buffer.from("hello"));
  });

  void test("without the field the answer is base64 with no blob_format", async () => {
    const r = await ok({ max_chunk_bytes: 3 });
    assert.equal(typeof r.blob, "string");
    assert.equal("blob_format" in r, false);
  });
});
