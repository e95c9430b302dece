/**
 * The Agent CLI command the stack runs (and prints for `--keep`) works for any token, including
 * one that starts with `-`: a base64url token does one time in 64, and CI once drew one
 * ("Did you forget to specify the option argument for '--token'?", exit 2).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { cliDownloadArgs } from "../../scripts/stack/connect-help.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";
import { sha256, testBytes } from "../support/agent-fake-computer.ts";

const DASH_TOKEN = "-Xq3_leading-dash-token";
const bytes = testBytes(200_000, 5);

let stack: AgentStack;
let computer: RunningComputer;

before(async () => {
  stack = await startAgentStack(DASH_TOKEN);
  await writeSkill(stack.home, "dash-skill", "body\n", { "data/blob.bin": bytes });
  computer = await inProcessComputer(stack, "pc");
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

void test("cliDownloadArgs downloads the file with a token that starts with a dash", async () => {
  const out = join(stack.dir, "out.bin");
  const args = cliDownloadArgs(
    { serverUrl: stack.url, token: DASH_TOKEN, officeId: stack.office, computer: "pc" },
    {
      skill: "dash-skill",
      rel_path: "data/blob.bin",
      path: "",
      size: bytes.length,
      sha256: sha256(bytes),
      mime: "application/octet-stream",
    },
    out,
  );
  const run = await runCli(args);
  assert.equal(run.code, 0, run.stderr);
  assert.ok((await readFile(out)).equals(bytes), "the downloaded file is the skill's file");
});
