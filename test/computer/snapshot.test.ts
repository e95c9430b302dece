/**
 * Snapshot consistency (D18): while another process rewrites a file (in-place writes and atomic
 * renames, alternately), every chunk served carries bytes that belong to the content whose sha256
 * it reports: never new bytes under the old digest.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { compileScript } from "../../scripts/launch/compile.ts";
import { versionBytes } from "./support/rewriter.ts";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const SIZE = 512 * 1024;
const VERSIONS = 60;
const fx = engineFixture({ settleMs: 10 });
after(() => fx.close());

void test("chunks served during rewrites always match the digest they were served under", async () => {
  const contents = new Map<string, Buffer>();
  for (let v = 0; v <= VERSIONS; v++) {
    const bytes = versionBytes(v, SIZE);
    contents.set(createHash("sha256").update(bytes).digest("hex"), bytes);
  }
  const path = join(fx.dir, "live.bin");
  writeFileSync(path, versionBytes(0, SIZE));
  const handle = fx.fileHandle(path);

  const writer = spawn(
    process.execPath,
    [
      await compileScript(fileURLToPath(new URL("./support/rewriter.ts", import.meta.url))),
      path,
      String(SIZE),
      String(VERSIONS),
    ],
    { stdio: "inherit" },
  );
  const exited = new Promise<number | null>((resolve) => writer.on("exit", resolve));
  let running = true;
  void exited.then(() => (running = false));

  let served = 0;
  let gone = 0;
  const digests = new Set<string>();
  let offset = 0;
  // Keep pulling (offsets cycle through the file) until the writer is done, then once more.
  for (let round = 0; running || round < 1; round += running ? 0 : 1) {
    // A chunk of an unchanged file can be answered without touching the event loop (cached
    // descriptor, synchronous fstat/read): yield so the writer's exit event is seen.
    await new Promise((resolve) => setImmediate(resolve));
    const r = await fx.engine.getBlob(
      blobReq(handle, { chunk_offset: offset, max_chunk_bytes: 48 * 1024 }),
    );
    if ("code" in r) {
      assert.equal((r.details as { reason: string }).reason, "gone", JSON.stringify(r));
      gone++;
      continue;
    }
    const ret = r;
    const content = contents.get(ret.sha256);
    assert.ok(content, "the digest names a version that was written");
    const bytes = Buffer.from(ret.blob as string, "base64");
    assert.ok(
      bytes.equals(content.subarray(ret.chunk_offset, ret.chunk_offset + bytes.length)),
      `chunk at ${ret.chunk_offset} disagrees with its sha256`,
    );
    served++;
    digests.add(ret.sha256);
    offset = ret.eof ? 0 : ret.chunk_offset + bytes.length;
  }
  assert.equal(await exited, 0);
  assert.ok(served > 20, `served ${served} chunks (gone ${gone})`);
  assert.ok(digests.size > 3, `saw ${digests.size} versions`);
});
