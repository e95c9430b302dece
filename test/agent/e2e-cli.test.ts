/**
 * End to end against a real stack (Server + Computer with a skill home and the demo MCP server):
 * a sidebanded 5 MB PNG comes back from `callTool` byte-identical, and each CLI command, run as
 * its own process, does its job and exits with the documented code.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { pngOfAbout } from "../../computer/tools/demo-content.ts";
import {
  REPO_ROOT,
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
  const mcp = join(stack.dir, "mcp.json");
  await writeFile(
    mcp,
    JSON.stringify({
      mcpServers: {
        demo: {
          command: process.execPath,
          args: ["--import", "tsx", join(REPO_ROOT, "computer/tools/demo-server.ts")],
          cwd: REPO_ROOT,
        },
      },
    }),
  );
  computer = await inProcessComputer(stack, "pc", { mcpConfig: mcp });
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

function base(): string[] {
  return ["--server", stack.url, "--office", stack.office, "--token", stack.token, "--json"];
}

void test("cli computers / skills / tools", async () => {
  const c = await runCli([...base(), "computers"]);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(JSON.parse(c.stdout), { computers: ["pc"] });

  const s = await runCli([...base(), "skills", "pc"]);
  assert.equal(s.code, 0, s.stderr);
  const skills = (JSON.parse(s.stdout) as { skills: { name: string }[] }).skills;
  assert.ok(skills.some((x) => x.name === "demo-skill"));

  const t = await runCli([...base(), "tools", "pc"]);
  assert.equal(t.code, 0, t.stderr);
  const tools = (JSON.parse(t.stdout) as { tools: { name: string }[] }).tools;
  assert.ok(tools.some((x) => x.name === "demo__echo"));
});

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
  const meta = JSON.parse(bin.stdout) as { sha256: string; mime_type: string };
  assert.equal(meta.sha256, sha256(logo));
  assert.equal(meta.mime_type, "image/png");
});

void test("cli call: JSON result; --out writes binary items to files", async () => {
  const echo = await runCli([...base(), "call", "pc", "demo__echo", '{"text":"hi"}']);
  assert.equal(echo.code, 0, echo.stderr);
  const r = JSON.parse(echo.stdout) as { content: { text: string }[] };
  assert.equal(r.content[0]!.text, "hi");

  const dir = join(stack.dir, "out");
  const imgs = await runCli([
    ...base(),
    "call",
    "pc",
    "demo__many_images",
    '{"count":2,"size":100000}',
    "--out",
    dir,
  ]);
  assert.equal(imgs.code, 0, imgs.stderr);
  const res = JSON.parse(imgs.stdout) as { files: { index: number; file: string }[] };
  assert.equal(res.files.length, 2);
  for (const f of res.files) {
    assert.ok((await readFile(f.file)).equals(pngOfAbout(100_000, f.index + 1)));
  }
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
  const file = join(stack.dir, "blob.bin");
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
    "--binary",
  ]);
  assert.equal(b.code, 0, b.stderr);
  assert.ok((await readFile(file)).equals(logo));
  const out = JSON.parse(b.stdout) as { sha256: string; requests: number };
  assert.equal(out.sha256, sha256(logo));
  assert.equal(out.requests, Math.ceil(logo.length / 16384));
});

void test("cli against the real stack: an unknown Computer is a protocol error (exit 3)", async () => {
  const missing = await runCli([...base(), "tools", "no-such-pc"]);
  assert.equal(missing.code, 3, missing.stdout);
  assert.equal((JSON.parse(missing.stdout) as { error: { code: number } }).error.code, 404);
});
