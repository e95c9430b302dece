/**
 * `npm run stack -- --keep`: after the scenarios the Server and Computers stay up, the stack prints
 * the Agent CLI command, and that exact command (run from another process) downloads the big
 * demo file, verified against the generator's sha256. Then SIGINT stops everything.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { DemoManifest } from "../../scripts/stack/demo-data.ts";
import { alive, cmdline, descendants, startStack } from "../support/stack-harness.ts";

function sh(command: string, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    child.once("exit", (code) => resolve({ code, out }));
  });
}

void test("--keep prints a working Agent CLI command; SIGINT then stops everything", async () => {
  const here = mkdtempSync(join(tmpdir(), "a2c-keep-"));
  let stack: ReturnType<typeof startStack> | undefined;
  let stopped = false;
  try {
    // INIT_CWD is where `npm run` was typed: the printed command writes its file there.
    stack = startStack(["--keep", "--agents", "2", "--only", "list-skills", "--big-mib", "4"], {
      INIT_CWD: here,
    });
    const [, manifestPath] = await stack.waitFor(/demo manifest\s+(\S+)/);
    const [, command] = await stack.waitFor(/^\s+(npm --prefix \S+ run agent -- .*)$/);
    const before = descendants(stack.child.pid!);
    assert.match(before.map(cmdline).join("\n"), /server\/main\.ts/);

    const run = await sh(command!, here);
    assert.equal(run.code, 0, run.out);
    const manifest = JSON.parse(readFileSync(manifestPath!, "utf8")) as DemoManifest;
    const bytes = readFileSync(join(here, "big.bin"));
    assert.equal(bytes.length, manifest.files.big.size);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), manifest.files.big.sha256);

    stack.child.kill("SIGINT");
    const { code } = await stack.exited;
    stopped = true;
    assert.equal(code, 0, "a kept stack stopped with Ctrl-C after passing exits 0");
    const left = before.filter(alive);
    assert.deepEqual(left, [], `left behind:\n${left.map(cmdline).join("\n")}`);
  } finally {
    // A failed assertion must not leave a kept stack running.
    if (stack && !stopped) {
      stack.child.kill("SIGINT");
      await stack.exited;
    }
    rmSync(here, { recursive: true, force: true });
  }
});
