/**
 * An upload's body from a file (agent/upload-source.ts `openBody`): the sha256 due before the
 * first byte is sent, taken in one pass that reads the next block while it hashes this one, is
 * the file's at every size around the block boundaries; an abort during the pass rejects it and
 * leaves nothing pending.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openBody } from "../../agent/upload-source.ts";

const MiB = 1024 * 1024;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-upload-body-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

void test("a file's sha256 and size at every size around the hash pass's blocks", async () => {
  for (const size of [1, 4096, MiB - 1, MiB, MiB + 1, 2 * MiB, 5 * MiB + 123]) {
    const bytes = randomBytes(size);
    const file = join(dir, `f-${size}.bin`);
    await writeFile(file, bytes);
    const body = await openBody(file);
    try {
      assert.equal(body.size, size);
      assert.equal(body.sha256, createHash("sha256").update(bytes).digest("hex"), `${size} B`);
      assert.deepEqual(await body.read(size - 1, 1), bytes.subarray(size - 1));
    } finally {
      await body.close();
    }
  }
});

void test("an abort during the hash pass rejects it with an AbortError", async () => {
  const file = join(dir, "big.bin");
  await writeFile(file, randomBytes(64 * MiB));
  const ac = new AbortController();
  const pass = openBody(file, { signal: ac.signal });
  ac.abort();
  await assert.rejects(pass, { name: "AbortError" });
});
