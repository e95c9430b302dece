/**
 * What a download prints off a TTY, from the CLI as a process against a real stack: a progress
 * line every 10 % and a final line (file, size, sha256 verified, time, MB/s) on stderr, nothing
 * on stdout; `--quiet` prints nothing at all, `--json` only the JSON summary on stdout.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const SIZE = 16 * 16384; // 16 chunks of 16 KiB
let stack: AgentStack;
let computer: RunningComputer;
let sha: string;

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "files", "Files.");
  sha = await writeRandomFile(join(root, "data.bin"), SIZE);
  computer = await inProcessComputer(stack, "pc");
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

function download(file: string, ...extra: string[]): ReturnType<typeof runCli> {
  return runCli([
    ...["--server", stack.url, "--office", stack.office, "--token", stack.token],
    ...["skill", "pc", "files", "data.bin", "-o", file, "--chunk-bytes", "16384", ...extra],
  ]);
}

void test("off a TTY: a line every 10 %, then the final line", async () => {
  const file = join(stack.dir, "plain.bin");
  const r = await download(file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "");
  const lines = r.stderr.split("\n");
  assert.equal(lines.pop(), "", "stderr ends with a line end");
  const final = lines.pop()!;
  assert.match(
    final,
    new RegExp(
      `^wrote ${file}: 256\\.0 KiB \\(262144 bytes\\), sha256 ${sha} verified, ` +
        "\\d+\\.\\d+ s, \\d+\\.\\d MB/s$",
    ),
  );
  // The bytes held after k of 16 chunks, printed when the tens digit of the percentage changes.
  const percents = lines.map((l) => {
    const m = /^plain\.bin: +(\d+)% [\d.]+ KiB\/256\.0 KiB \d+\.\d MB\/s ETA (\d+s|--)$/.exec(l);
    assert.ok(m, `progress line: ${l}`);
    return Number(m[1]);
  });
  assert.deepEqual(percents, [6, 13, 25, 31, 44, 50, 63, 75, 81, 94, 100]);
  assert.equal((await readFile(file)).length, SIZE);
});

void test("--quiet: nothing on stdout or stderr", async () => {
  const file = join(stack.dir, "quiet.bin");
  assert.deepEqual(await download(file, "--quiet"), { code: 0, stdout: "", stderr: "" });
  assert.equal((await readFile(file)).length, SIZE);
});

void test("--json: one JSON object on stdout, nothing on stderr", async () => {
  const file = join(stack.dir, "json.bin");
  const r = await download(file, "--json");
  assert.equal(r.code, 0);
  assert.equal(r.stderr, "");
  assert.deepEqual(JSON.parse(r.stdout), {
    name: "files",
    rel_path: "data.bin",
    mime_type: "application/octet-stream",
    total_size: SIZE,
    sha256: sha,
    file,
  });
  assert.equal(r.stdout.split("\n").length, 2, "one line");
});
