/**
 * Refusals of the Server or the Computer, from the CLI as a process against a real stack: the
 * code, the reason and the detail that matters in one line, a hint where the fix is known, exit
 * 3. A missing file and `../../etc/passwd` say different things; a file over the Computer's cap
 * says its size, the cap and the flag that raises it. An empty office says so on stderr.
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

let stack: AgentStack;
let computer: RunningComputer;

before(async () => {
  stack = await startAgentStack();
  await writeSkill(stack.home, "demo", "Hello.", { "big.bin": Buffer.alloc(1500, 7) });
  computer = await inProcessComputer(stack, "pc", { maxSize: 1024 });
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

function args(office = stack.office): string[] {
  return ["--server", stack.url, "--office", office, "--token", stack.token];
}

async function expectRefusal(command: string[], stderr: string): Promise<void> {
  const r = await runCli([...args(), ...command]);
  assert.equal(r.stderr, stderr);
  assert.equal(r.stdout, "");
  assert.equal(r.code, 3);
}

void test("4017: traversal and a missing file say different things", async () => {
  await expectRefusal(
    ["skill", "pc", "demo", "../../etc/passwd"],
    "a2c-agent: skill 'demo' resource '../../etc/passwd' is outside the skill's directory (4017 traversal)\n",
  );
  await expectRefusal(
    ["skill", "pc", "demo", "missing.txt"],
    "a2c-agent: skill 'demo' has no file 'missing.txt' (4017 not_found)\n" +
      "hint: 'a2c-agent skill pc demo' shows SKILL.md, which names the skill's files\n",
  );
});

void test("4017 too_large: the size, the Computer's cap and the flag that raises it", async () => {
  await expectRefusal(
    ["skill", "pc", "demo", "big.bin", "-o", "never-written.bin"],
    "a2c-agent: skill 'demo' resource 'big.bin' is 1.5 KiB, over the Computer's cap of 1.0 KiB " +
      "(4017 too_large)\n" +
      "hint: the Computer's --max-size BYTES (A2C_MAX_SIZE) raises the cap; this one needs at least 1500\n",
  );
  const r = await runCli([...args(), "--json", "skill", "pc", "demo", "big.bin", "-o", "x.bin"]);
  const error = (JSON.parse(r.stdout) as { error: Record<string, unknown> }).error;
  assert.equal(error.code, 4017);
  assert.equal(error.reason, "too_large");
  assert.equal(error.total_size, 1500);
  assert.equal(error.max_size, 1024);
});

void test("4014, 4016, 404 and 4018: each named, with where to look", async () => {
  await expectRefusal(
    ["skill", "pc", "nope"],
    "a2c-agent: Computer 'pc' has no skill 'nope' (4014)\nhint: 'a2c-agent skills pc' lists its skills\n",
  );
  await expectRefusal(
    ["skill", "pc", "bad name!!"],
    "a2c-agent: 'bad name!!' is not a valid skill name (4016)\n" +
      "hint: use a name as 'a2c-agent skills pc' lists it\n",
  );
  await expectRefusal(
    ["tools", "no-such-pc"],
    `a2c-agent: no Computer 'no-such-pc' in office '${stack.office}' (404)\n` +
      "hint: 'a2c-agent computers' lists the office's Computers\n",
  );
  await expectRefusal(
    ["blob", "pc", "not-a-handle", "-o", "never-written.bin"],
    "a2c-agent: the Computer does not accept this blob handle (4018 invalid_handle)\n" +
      "hint: handles come from 'skill' or 'call' answers of the same Computer\n",
  );
});

void test("computers in an empty (or mistyped) office: a note on stderr, exit 0", async () => {
  const note =
    "a2c-agent: no Computers in office 'no-such-office' (an empty office, or a mistyped --office)\n";
  const plain = await runCli([...args("no-such-office"), "computers"]);
  assert.deepEqual(plain, { code: 0, stdout: "", stderr: note });
  const json = await runCli([...args("no-such-office"), "--json", "computers"]);
  assert.deepEqual(json, { code: 0, stdout: '{"computers":[]}\n', stderr: note });
  const quiet = await runCli([...args("no-such-office"), "--quiet", "computers"]);
  assert.deepEqual(quiet, { code: 0, stdout: "", stderr: "" });
  const found = await runCli([...args(), "computers"]);
  assert.deepEqual(found, { code: 0, stdout: "pc\n", stderr: "" });
});
