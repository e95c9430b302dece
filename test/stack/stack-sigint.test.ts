/**
 * Ctrl-C in the middle of the scenarios: the stack stops every process group it started (Server,
 * Computers with their MCP servers, Agents) and exits 130, leaving nothing behind.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { alive, cmdline, descendants, startStack } from "../support/stack-harness.ts";

void test("SIGINT while Agents run leaves no process behind", async () => {
  const stack = startStack(["--agents", "2", "--big-mib", "8"]);
  // A scenario has started: every role is up.
  await stack.waitFor(/^agent-\d\s+\[\d+\/\d+\] \S/);
  const pids = descendants(stack.child.pid!);
  const cmds = pids.map(cmdline).join("\n");
  // The shipped bins and the compiled scripts (scripts/launch/).
  assert.match(cmds, /server\/dist\/main\.js/);
  assert.equal(cmds.match(/computer\/dist\/main\.js/g)?.length, 2, cmds);
  assert.equal(cmds.match(/scripts__stack__agent-main\.mjs/g)?.length, 2, cmds);
  assert.ok(
    (cmds.match(/scripts__demo__mcp-server\.mjs/g)?.length ?? 0) >= 1,
    `MCP servers:\n${cmds}`,
  );

  stack.child.kill("SIGINT");
  const { code } = await stack.exited;
  assert.equal(code, 130);
  const left = pids.filter(alive);
  assert.deepEqual(left, [], `left behind:\n${left.map(cmdline).join("\n")}`);
});
