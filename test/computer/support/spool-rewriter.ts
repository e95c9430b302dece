/**
 * A foreign writer in the tool spool, as a separate process: it keeps rewriting one spooled blob's
 * file while a test pulls it, cycling through (1) an atomic rename of the same bytes (what a second
 * Computer sharing the state directory does when it spools the same content), (2) an in-place
 * overwrite with OTHER bytes (a file that no longer holds its name's content) and (3) an
 * in-place overwrite with the right bytes again. It ends on the right bytes. A file the engine has
 * removed meanwhile (it forgot the blob) is written afresh by the rename step.
 *
 * Usage: node COMPILED <path> <size> <rounds>
 * (COMPILED: scripts/launch/compile.ts `compileScript` of this file; tests start it so).
 */
import { closeSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { isEntryModule } from "../../../scripts/launch/compile.ts";
import { versionBytes } from "./rewriter.ts";

/** The spooled content (version 0) and the foreign bytes (version 1). */
export function spoolContents(size: number): { right: Buffer; other: Buffer } {
  return { right: versionBytes(0, size), other: versionBytes(1, size) };
}

function inPlace(path: string, bytes: Buffer): void {
  let fd: number;
  try {
    fd = openSync(path, "r+");
  } catch {
    return; // removed by the engine (forgotten): the next rename brings it back
  }
  try {
    writeSync(fd, bytes, 0, bytes.length, 0);
  } finally {
    closeSync(fd);
  }
}

async function main(): Promise<void> {
  const [path, sizeArg, roundsArg] = process.argv.slice(2);
  const { right, other } = spoolContents(Number(sizeArg));
  for (let round = 0; round < Number(roundsArg); round++) {
    writeFileSync(`${path}.foreign`, right);
    renameSync(`${path}.foreign`, path!);
    await sleep(15);
    inPlace(path!, other);
    await sleep(15);
    inPlace(path!, right);
    await sleep(15);
  }
}

if (isEntryModule(import.meta.url)) {
  await main();
}
