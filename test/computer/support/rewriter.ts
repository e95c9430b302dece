/**
 * A separate process that keeps rewriting one file while the test serves it: version v (1..N)
 * is written either in place (one write(2) over the same inode, same size) or by atomic rename,
 * alternately, with short pauses. Contents are deterministic per version (`versionBytes`), so the
 * test can tell which content a digest belongs to.
 *
 * Usage: node COMPILED <path> <size> <versions>
 * (COMPILED: scripts/launch/compile.ts `compileScript` of this file; tests start it so).
 */
import { createCipheriv, createHash } from "node:crypto";
import { closeSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { isEntryModule } from "../../../scripts/launch/compile.ts";

export function versionBytes(version: number, size: number): Buffer {
  const key = createHash("sha256").update(`version ${version}`).digest().subarray(0, 16);
  const cipher = createCipheriv("aes-128-ctr", key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(size)), cipher.final()]);
}

async function main(): Promise<void> {
  const [path, sizeArg, versionsArg] = process.argv.slice(2);
  const size = Number(sizeArg);
  const versions = Number(versionsArg);
  for (let v = 1; v <= versions; v++) {
    const bytes = versionBytes(v, size);
    if (v % 2 === 0) {
      const fd = openSync(path!, "r+");
      writeSync(fd, bytes, 0, size, 0);
      closeSync(fd);
    } else {
      writeFileSync(`${path}.tmp`, bytes);
      renameSync(`${path}.tmp`, path!);
    }
    await sleep(5 + ((v * 37) % 40));
  }
}

if (isEntryModule(import.meta.url)) {
  await main();
}
