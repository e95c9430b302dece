/**
 * End to end with the real Server and Computer: a 256 MiB skill file downloaded to disk with
 * window 8 keeps the Agent's RSS growth under 64 MiB (the Agent runs in its own process so its
 * peak RSS is its own). Judged in spec mode (base64 carriage, `binary: false`) and with binary
 * carriage, the default (D19). In base64 the pull loop decodes each chunk's string inside the
 * ack callback straight into its region (agent/pull-chunk.ts `decodeBlobEarly`): a string held
 * through the ack's promise chain would be promoted by scavenges and fill the old generation.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { ChildProcess } from "node:child_process";
import { startScript } from "../../scripts/launch/roles.ts";
import {
  exited,
  spawnComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";

const SIZE = 256 * 1024 * 1024;
let stack: AgentStack;
let computer: ChildProcess | undefined;
let expected: string;

async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const c of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest("hex");
}

before(async () => {
  stack = await startAgentStack();
  const root = await writeSkill(stack.home, "big", "A skill with a big asset.\n");
  expected = await writeRandomFile(join(root, "assets", "big.bin"), SIZE);
  // The Computer runs as its own process: the Server (here), the Computer and the Agent (child)
  // each get their own event loop.
  computer = spawnComputer(stack, "pc"); // the child Agent waits for it to join
});
after(async () => {
  computer?.kill("SIGKILL");
  if (computer) await exited(computer);
  await stack?.close();
});

async function download(binary: boolean): Promise<void> {
  const out = join(stack.dir, binary ? "big-bin.out" : "big-b64.out");
  // The fixture compiled (scripts/launch/compile.ts), on plain node like the Agent's users.
  const child = await startScript("test/agent/fixtures/download-child.ts", {
    name: binary ? "download-binary" : "download-base64",
    nodeFlags: ["--expose-gc"],
    args: [
      ...[stack.url, stack.token, stack.office, "pc", "big", "assets/big.bin", out],
      ...["8", binary ? "1" : "0"],
    ],
    env: { A2C_LOG_LEVEL: "error" },
  });
  const exit = await child.exited;
  assert.equal(exit.code, 0, child.tail().join("\n"));
  const r = JSON.parse(child.stdout()) as {
    rssBefore: number;
    peak: number;
    sha256: string;
    size: number;
    bytesReceived: number;
  };
  assert.equal(r.size, SIZE);
  assert.equal(r.sha256, expected);
  assert.equal(await sha256File(out), expected, "the file on disk is the verified content");
  await rm(out);
  const growth = r.peak - r.rssBefore;
  const mode = binary ? "binary" : "base64";
  console.log(`agent RSS growth during the ${mode} download: ${(growth / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(growth < 64 * 2 ** 20, `RSS grew by ${(growth / 2 ** 20).toFixed(1)} MiB`);
}

void test("256 MiB to disk, window 8, base64 (spec mode): verified, Agent RSS growth < 64 MiB", () =>
  download(false));

void test("256 MiB to disk, window 8, binary (the default): verified, Agent RSS growth < 64 MiB", () =>
  download(true));
