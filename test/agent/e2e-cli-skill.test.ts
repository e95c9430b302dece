/**
 * The CLI as a process against a real stack: `skill` (inline text, drained text handle, binary
 * to a file) and `blob` with window / chunk size, in binary carriage (the default) and base64
 * (`--base64`, the spec's mode); the JSON answer says which carriage the chunks used.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";
import { sha256, testBytes } from "../support/agent-fake-computer.ts";

let stack: AgentStack;
let computer: RunningComputer;
const logo = testBytes(300_000, 77);
const notes = "# Notes\n\n" + "Line of notes ✓\n".repeat(4000); // > inline budget: a text handle

before(async () => {
  stack = await startAgentStack();
  await writeSkill(stack.home, "demo-skill", "Hello from the demo skill.\n", {
    "assets/logo.png": logo,
    "references/notes.md": notes,
  });
  computer = await inProcessComputer(stack, "pc");
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

function base(): string[] {
  return ["--server", stack.url, "--office", stack.office, "--token", stack.token, "--json"];
}

void test("cli skill: text body to stdout, text handle drained, binary to a file", async () => {
  const plain = await runCli([
    "--server",
    stack.url,
    "--office",
    stack.office,
    "--token",
    stack.token,
    "skill",
    "pc",
    "demo-skill",
  ]);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, "Hello from the demo skill.\n");

  const big = await runCli([...base(), "skill", "pc", "demo-skill", "references/notes.md"]);
  assert.equal(big.code, 0, big.stderr);
  assert.equal((JSON.parse(big.stdout) as { body: string }).body, notes);

  const file = join(stack.dir, "logo.png");
  const bin = await runCli([...base(), "skill", "pc", "demo-skill", "assets/logo.png", "-o", file]);
  assert.equal(bin.code, 0, bin.stderr);
  assert.ok((await readFile(file)).equals(logo));
  const meta = JSON.parse(bin.stdout) as { sha256: string; mime_type: string; carriage: string };
  assert.equal(meta.sha256, sha256(logo));
  assert.equal(meta.mime_type, "image/png");
  assert.equal(meta.carriage, "binary");
});

void test("cli blob: a raw handle to a file, with window and chunk size", async () => {
  // Mint a handle as the Agent, leave the office, then let the CLI (the next Agent) pull it:
  // handles are stateless, so they outlive the session that got them.
  const agent = new AgentClient({ url: stack.url, token: stack.token });
  await agent.connect();
  await agent.joinOffice(stack.office);
  const ret = await agent.getSkillRaw("pc", "demo-skill", "assets/logo.png");
  await agent.leaveOffice();
  await agent.close();
  for (const carriage of ["binary", "base64"]) {
    const file = join(stack.dir, `blob-${carriage}.bin`);
    const b = await runCli([
      ...base(),
      "blob",
      "pc",
      ret.blob_handle!,
      "-o",
      file,
      "--window",
      "4",
      "--chunk-bytes",
      "16384",
      ...(carriage === "base64" ? ["--base64"] : ["--binary"]),
    ]);
    assert.equal(b.code, 0, b.stderr);
    assert.ok((await readFile(file)).equals(logo));
    const out = JSON.parse(b.stdout) as {
      sha256: string;
      requests: number;
      carriage: string;
      stats: { bytes_received: number };
    };
    assert.equal(out.sha256, sha256(logo));
    // --chunk-bytes is a ceiling: the pull may start with smaller chunks while it learns the
    // path's rate (D40), never with bigger ones, and no byte is asked twice.
    assert.ok(out.requests >= Math.ceil(logo.length / 16384), String(out.requests));
    assert.equal(out.stats.bytes_received, logo.length);
    assert.equal(out.carriage, carriage);
  }
});
