/**
 * Three versions of one `SKILL.md` and a separate process that keeps rewriting it while a test
 * pulls it. Versions A and B have the same frontmatter and body size (same-size in-place
 * rewrites); C has a longer frontmatter and a bigger body (rewrites that change the size and
 * where the body starts). Bodies are deterministic keystreams (`versionBytes`), so a test can
 * tell which version a digest names and check a chunk's bytes at its offset.
 *
 * Rewrite k goes from version (k-1) mod 3 to k mod 3, alternately in place (odd k: one pwrite
 * over the same inode when the size stays, else truncate-and-write as an editor saves) and by
 * atomic rename (even k). Every fourth rewrite is followed by a pause longer than the Computer's
 * settle window, so content also stays put long enough to be served; the others follow quickly.
 *
 * Truncate-and-write is two system calls with one real content between them: the empty file.
 * The kernel sets the new size before it stamps the truncation's times, so a reader can briefly
 * see the empty file under the previous, long-settled timestamps and serve it as what it is, the
 * empty content (seen here in most runs). `EMPTY_SHA256` lets a test accept it apart from the
 * versions; no other intermediate content exists, every other state is torn.
 *
 * Usage: node COMPILED <path> <bodyBytes> <rewrites>
 * (COMPILED: scripts/launch/compile.ts `compileScript` of this file; tests start it so).
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { compileScript, isEntryModule } from "../../../scripts/launch/compile.ts";
import { versionBytes } from "./rewriter.ts";

export interface SkillMdVersion {
  /** The whole file. */
  file: Buffer;
  /** The served bytes: the file with its frontmatter stripped. */
  body: Buffer;
}

/** sha256 of the empty file's body (the state between a truncate and its write). */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const FRONTMATTER = "---\nname: live\ndescription: A SKILL.md rewritten while it is pulled\n";

/** Version `v` (0, 1 or 2) of the SKILL.md whose A/B bodies have `bodyBytes` bytes. */
export function skillMdVersion(v: number, bodyBytes: number): SkillMdVersion {
  const long = v % 3 === 2;
  const fm = FRONTMATTER + (long ? `metadata:\n  pad: "${"p".repeat(333)}"\n` : "") + "---\n";
  const body = versionBytes(v % 3, long ? bodyBytes + 12_345 : bodyBytes);
  return { file: Buffer.concat([Buffer.from(fm), body]), body };
}

export interface RunningWriter {
  /** True until the writer process has exited. */
  readonly writing: boolean;
  /** Its exit code. */
  readonly exited: Promise<number | null>;
  kill(): void;
}

/** Starts the writer process (this file, compiled) on `path` (a SKILL.md now holding version 0). */
export async function startSkillMdRewriter(
  path: string,
  bodyBytes: number,
  rewrites: number,
): Promise<RunningWriter> {
  const writer = spawn(
    process.execPath,
    [
      await compileScript(fileURLToPath(import.meta.url)),
      ...[path, String(bodyBytes), String(rewrites)],
    ],
    { stdio: "inherit" },
  );
  let writing = true;
  const exited = new Promise<number | null>((resolve) => writer.on("exit", resolve));
  void exited.then(() => (writing = false));
  const running: RunningWriter = {
    get writing() {
      return writing;
    },
    exited,
    kill: () => void writer.kill(),
  };
  return running;
}

function rewrite(path: string, k: number, from: Buffer, to: Buffer): void {
  if (k % 2 === 0) {
    writeFileSync(`${path}.tmp`, to);
    renameSync(`${path}.tmp`, path);
  } else if (from.length === to.length) {
    const fd = openSync(path, "r+");
    try {
      writeSync(fd, to, 0, to.length, 0);
    } finally {
      closeSync(fd);
    }
  } else writeFileSync(path, to); // O_TRUNC, then the new bytes
}

async function main(): Promise<void> {
  const [path, bodyArg, rewritesArg] = process.argv.slice(2);
  const bodyBytes = Number(bodyArg);
  const files = [0, 1, 2].map((v) => skillMdVersion(v, bodyBytes).file);
  for (let k = 1; k <= Number(rewritesArg); k++) {
    rewrite(path!, k, files[(k - 1) % 3]!, files[k % 3]!);
    await sleep(k % 4 === 0 ? 250 : (k * 7) % 20);
  }
}

if (isEntryModule(import.meta.url)) {
  await main();
}
