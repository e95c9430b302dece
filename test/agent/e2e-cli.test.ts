/**
 * The CLI as a process against a real stack with the demo MCP server: `tools` and `call` (JSON
 * result; `--out` writes binary items, sidebanded ones pulled straight to disk; Ctrl-C cancels).
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { pngOfAbout } from "../../scripts/demo/content.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  type AgentStack,
} from "../support/agent-stack.ts";
import { demoServer } from "../support/tools-harness.ts";
import { startCli } from "../support/cli-process.ts";

let stack: AgentStack;
let computer: RunningComputer;

before(async () => {
  stack = await startAgentStack();
  const mcp = join(stack.dir, "mcp.json");
  await writeFile(
    mcp,
    JSON.stringify({
      mcpServers: {
        demo: await demoServer(),
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

void test("cli tools", async () => {
  const t = await runCli([...base(), "tools", "pc"]);
  assert.equal(t.code, 0, t.stderr);
  const tools = (JSON.parse(t.stdout) as { tools: { name: string }[] }).tools;
  assert.ok(tools.some((x) => x.name === "demo__echo"));
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

void test("cli call, Ctrl-C while the tool runs: the call is cancelled, exit 130", async () => {
  const cli = startCli([
    ...base().filter((a) => a !== "--json"),
    "call",
    "pc",
    "demo__slow",
    '{"ms":600000}',
  ]);
  // The call is in flight once the Server holds it for the Computer.
  while (stack.harness.server.inflight() === 0) await new Promise((r) => setTimeout(r, 20));
  cli.child.kill("SIGINT");
  const r = await cli.done;
  assert.deepEqual(
    { code: r.code, stdout: r.stdout, stderr: r.stderr },
    {
      code: 130,
      stdout: "",
      stderr:
        "a2c-agent: interrupted: the tool call was cancelled (server:tool_call_cancel sent)\n",
    },
  );
});
