/**
 * D18 for tool spool items: the bytes served under a spooled blob's sha256 (its cid) are always
 * that content's bytes, also while its file is rewritten or evicted during a pull. A file that no
 * longer holds its name's content is `gone` (and forgotten by the spool), never served under the
 * name; a rename of the same content, or the right bytes written back, serve again.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { BlobEngine } from "../../../computer/blob/engine.ts";
import { compileScript } from "../../../scripts/launch/compile.ts";
import { HandleCodec } from "../../../computer/blob/handle.ts";
import { HashCache } from "../../../computer/blob/hash-cache.ts";
import { createToolProducer, mintToolHandle } from "../../../computer/tools/producer.ts";
import { BlobSpool } from "../../../computer/tools/spool.ts";
import { isErrorPayload, type ErrorPayload, type GetBlobRet } from "../../../protocol/index.ts";
import { quietLog } from "../../support/tools-harness.ts";
import { spoolContents } from "../support/spool-rewriter.ts";

const root = mkdtempSync(join(tmpdir(), "a2c-spool-consistency-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function rig(maxBytes?: number) {
  const spool = await BlobSpool.open({
    dir: join(root, `s${n++}`),
    log: quietLog,
    ...(maxBytes !== undefined ? { maxBytes } : {}),
  });
  const engine = new BlobEngine({
    codec: new HandleCodec(randomBytes(32)),
    hashCache: new HashCache({ pool: null }),
    maxHttpBufferSize: 1_000_000,
  });
  engine.register(createToolProducer(spool));
  const chunk = (handle: string, offset: number) =>
    engine.getBlob({
      agent: "a",
      req_id: `r${n++}`,
      computer: "c",
      blob_handle: handle,
      chunk_offset: offset,
      max_chunk_bytes: 64 * 1024,
    });
  return { spool, engine, chunk, handle: (cid: string) => mintToolHandle(engine, cid, "a/b") };
}

/** An answer is the content's bytes at its offset under its cid, or `gone`; anything else fails. */
function check(r: GetBlobRet | ErrorPayload, content: Buffer): boolean {
  if (isErrorPayload(r)) {
    assert.deepEqual(r.details, { reason: "gone" }, JSON.stringify(r));
    return false;
  }
  assert.equal(r.sha256, sha(content));
  const bytes = Buffer.from(r.blob as string, "base64");
  assert.ok(
    bytes.equals(content.subarray(r.chunk_offset, r.chunk_offset + bytes.length)),
    `chunk at ${r.chunk_offset} served under the cid carries other bytes`,
  );
  return true;
}

void test("a spool file overwritten with other bytes is gone and forgotten, never served under its cid", async () => {
  const { spool, engine, chunk, handle } = await rig();
  try {
    const { right, other } = spoolContents(256 * 1024);
    const cid = await spool.put(right);
    const h = handle(cid);
    assert.ok(check(await chunk(h, 0), right));
    writeFileSync(join(spool.dir, cid), other); // a foreign in-place write, same size
    assert.equal(check(await chunk(h, 64 * 1024), right), false);
    assert.equal(spool.has(cid), false, "the spool forgot the blob");
    assert.equal(check(await chunk(h, 0), right), false);
    await spool.put(right); // the tool is called again
    assert.ok(check(await chunk(h, 64 * 1024), right));
  } finally {
    await engine.close();
  }
});

void test("a spooled blob rewritten by rename and in place by another process while pulled: only its own bytes", async () => {
  const { spool, engine, chunk, handle } = await rig();
  try {
    const size = 512 * 1024;
    const { right } = spoolContents(size);
    const cid = await spool.put(right);
    const h = handle(cid);
    const writer = spawn(
      process.execPath,
      [
        await compileScript(
          fileURLToPath(new URL("../support/spool-rewriter.ts", import.meta.url)),
        ),
        join(spool.dir, cid),
        String(size),
        "40",
      ],
      { stdio: "inherit" },
    );
    let writing = true;
    const exited = new Promise<number | null>((resolve) => writer.on("exit", resolve));
    void exited.then(() => (writing = false));
    let served = 0;
    let gone = 0;
    let offset = 0;
    while (writing) {
      // A chunk from a cached descriptor may not yield: let the writer's exit be seen.
      await new Promise((resolve) => setImmediate(resolve));
      const r = await chunk(h, offset);
      if (check(r, right)) {
        served++;
        offset = (r as GetBlobRet).eof ? 0 : offset + 64 * 1024;
      } else gone++;
    }
    assert.equal(await exited, 0);
    console.log(`during 40 foreign rewrite rounds: ${served} chunks served, ${gone} gone`);
    // The writer ended on the right bytes; the blob may have been forgotten on the way.
    if (!spool.has(cid)) await spool.put(right);
    for (let at = 0; at < size; at += 64 * 1024) assert.ok(check(await chunk(h, at), right));
  } finally {
    await engine.close();
  }
});

void test("a spooled blob evicted during a pull is gone from the next chunk on", async () => {
  const size = 300_000;
  const { spool, engine, chunk, handle } = await rig(size + size / 2);
  try {
    const first = randomBytes(size);
    const h = handle(await spool.put(first));
    assert.ok(check(await chunk(h, 0), first));
    await spool.put(randomBytes(size)); // over the bound: the least recently used goes
    assert.equal(check(await chunk(h, 64 * 1024), first), false);
  } finally {
    await engine.close();
  }
});
