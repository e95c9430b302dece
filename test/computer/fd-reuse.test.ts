// @pure
/**
 * Descriptor reuse between chunks (computer/blob/fd-cache.ts): pulls of an unchanged file open it
 * once, yet every pull still serves what a fresh open would: a rewrite (in place or by rename) is
 * served as the new content under its new digest, a removed file is gone, and a directory swapped
 * for a symlink after the descriptor was cached is refused (forbidden), never read from outside.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import type { GetBlobRet } from "../../protocol/index.ts";
import type { HandleFields, Producer, ResolveResult } from "../../computer/contracts.ts";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const fx = engineFixture();
after(async () => {
  await fx.engine.close();
  fx.close();
});

const sha = (b: Buffer | string): string => createHash("sha256").update(b).digest("hex");

async function pull(handle: string, offset = 0): Promise<GetBlobRet> {
  const r = await fx.engine.getBlob(blobReq(handle, { chunk_offset: offset, max_chunk_bytes: 4 }));
  assert.ok(!("code" in r), JSON.stringify(r));
  return r;
}

void test("an unchanged file is opened once for many chunks", async () => {
  const path = join(fx.dir, "same.bin");
  writeFileSync(path, "0123456789abcdef");
  const handle = fx.fileHandle(path);
  const opens = await fx.fileOpens();
  for (let offset = 0; offset < 16; offset += 4) {
    const r = await pull(handle, offset);
    assert.equal(
      Buffer.from(r.blob as string, "base64").toString(),
      "0123456789abcdef".slice(offset, offset + 4),
    );
  }
  assert.equal((await fx.fileOpens()) - opens, 1);
});

void test("rewrites after the descriptor was cached: new bytes under the new digest", async () => {
  const path = join(fx.dir, "rewritten.bin");
  writeFileSync(path, "version-1");
  const handle = fx.fileHandle(path);
  assert.equal((await pull(handle)).sha256, sha("version-1"));
  writeFileSync(path, "version-2"); // in place (same inode)
  let r = await pull(handle);
  assert.equal(r.sha256, sha("version-2"));
  assert.equal(Buffer.from(r.blob as string, "base64").toString(), "vers");
  writeFileSync(`${path}.tmp`, "VERSION-3");
  renameSync(`${path}.tmp`, path); // atomic rename over the cached inode
  r = await pull(handle);
  assert.equal(r.sha256, sha("VERSION-3"));
  assert.equal(Buffer.from(r.blob as string, "base64").toString(), "VERS");
  unlinkSync(path);
  assert.deepEqual(await fx.engine.getBlob(blobReq(handle)), {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "gone" },
  });
});

void test("a directory swapped for a symlink after caching: forbidden, no outside byte", async () => {
  const dir = join(fx.dir, "pkg");
  const outside = join(fx.dir, "outside");
  mkdirSync(dir);
  mkdirSync(outside);
  writeFileSync(join(dir, "f.txt"), "inside");
  writeFileSync(join(outside, "f.txt"), "OUTSIDE");
  const path = join(dir, "f.txt");
  // A producer that (unlike the SKILL one) does not re-check, so the engine's own guard decides.
  const producer: Producer = {
    kind: "skill",
    resolve: async (_f: HandleFields): Promise<ResolveResult> => ({
      ok: true,
      source: { type: "file", path, mimeType: "text/plain", canonical: true },
    }),
  };
  fx.engine.register(producer);
  const handle = fx.engine.mint("skill", { x: 1 });
  assert.equal((await pull(handle)).sha256, sha("inside"));
  renameSync(dir, `${dir}.aside`);
  symlinkSync(outside, dir);
  assert.deepEqual(await fx.engine.getBlob(blobReq(handle)), {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "forbidden" },
  });
});
