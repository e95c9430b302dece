// @pure
/**
 * A pooled hash runs its thread at the cache's nice offset and leaves the main thread alone: on
 * Linux setpriority(PRIO_PROCESS, 0) from a thread changes that thread only, which this checks
 * through /proc/self/task/<tid>/stat (the piscina thread outlives the task, idleTimeout 30 s).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import { createHashPool } from "../../computer/workers/pool.ts";
import { signatureOf } from "../../computer/blob/descriptors.ts";

const pool = createHashPool(1)!;
const dir = mkdtempSync(join(tmpdir(), "a2c-hash-nice-"));
after(async () => {
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
});

function threadNices(): number[] {
  return readdirSync("/proc/self/task").map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
  });
}

void test(
  "the pool's hash thread runs 7 nicer than the main thread, the main thread is unchanged",
  { skip: !existsSync("/proc/self/task") },
  async () => {
    const mainNice = getPriority(0);
    const offset = Math.min(7, 19 - mainNice);
    const cache = new HashCache({ pool, hashNice: offset });
    const bytes = randomBytes(3 * 1024 * 1024); // above the inline limit: hashed in the pool
    const file = join(dir, "f.bin");
    writeFileSync(file, bytes);
    const fd = openSync(file, "r");
    try {
      const st = fstatSync(fd, { bigint: true });
      const digest = await cache.fileSha256(fd, signatureOf(st), bytes.length);
      assert.equal(digest, createHash("sha256").update(bytes).digest("hex"));
    } finally {
      closeSync(fd);
    }
    assert.equal(getPriority(0), mainNice, "the main thread kept its priority");
    const nices = threadNices();
    assert.equal(
      nices.filter((n) => n === mainNice + offset).length,
      1,
      `thread nices: ${nices.join(",")}`,
    );
  },
);
