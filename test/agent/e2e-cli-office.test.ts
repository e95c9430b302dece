/**
 * The CLI as a process against a real stack (Server + Computer with a skill home): `computers`,
 * `skills`, and exit 3 for an unknown Computer.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";
import { testBytes } from "../support/agent-fake-computer.ts";

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

void test("cli computers / skills", async () => {
  const c = await runCli([...base(), "computers"]);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(JSON.parse(c.stdout), { computers: ["pc"] });

  const s = await runCli([...base(), "skills", "pc"]);
  assert.equal(s.code, 0, s.stderr);
  const skills = (JSON.parse(s.stdout) as { skills: { name: string }[] }).skills;
  assert.ok(skills.some((x) => x.name === "demo-skill"));
});

void test("cli against the real stack: an unknown Computer is a protocol error (exit 3)", async () => {
  const missing = await runCli([...base(), "tools", "no-such-pc"]);
  assert.equal(missing.code, 3, missing.stdout);
  assert.equal((JSON.parse(missing.stdout) as { error: { code: number } }).error.code, 404);
});
