/**
 * `a2c-agent put` as a process against a real Server and Computer: stdout is the stored file's
 * path (a tool reads it back by that path), `--json` one object, `--name` the hint; a missing or
 * empty FILE is a usage error (2), a Computer without a landing root a protocol error (3) with
 * one clear line; Ctrl-C exits 130, and an Agent killed mid-upload leaves no file in the landing
 * root.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  exited,
  inProcessComputer,
  runCli,
  startAgentStack,
  writeRandomFile,
  type AgentStack,
} from "../support/agent-stack.ts";
import { startCli } from "../support/cli-process.ts";
import { demoServer } from "../support/tools-harness.ts";

let stack: AgentStack;
const computers: RunningComputer[] = [];
let root: string;
let small: string;
let big: string;

before(async () => {
  stack = await startAgentStack();
  root = join(stack.dir, "landing");
  const mcp = join(stack.dir, "mcp.json");
  writeFileSync(mcp, JSON.stringify({ mcpServers: { demo: await demoServer() } }));
  computers.push(
    await inProcessComputer(stack, "pc", { landingRoot: root, mcpConfig: mcp }),
    await inProcessComputer(stack, "bare"),
  );
  small = join(stack.dir, "small.bin");
  await writeRandomFile(small, 300_000);
  big = join(stack.dir, "big.bin");
  await writeRandomFile(big, 48 * 1024 * 1024);
});
after(async () => {
  for (const c of computers) await c.close();
  await stack?.close();
});

const base = (): string[] => [
  "--server",
  stack.url,
  "--office",
  stack.office,
  "--token",
  stack.token,
];
const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");
const stored = (): string[] => readdirSync(root).filter((n) => n !== ".a2c-upload");

void test("put: stdout is the landing path, a tool reads the file there", async () => {
  const r = await runCli([...base(), "put", "pc", small]);
  assert.equal(r.code, 0, r.stderr);
  const landing = r.stdout.trim();
  assert.equal(r.stdout, `${landing}\n`, "stdout is the path alone");
  assert.match(landing, /\/[0-9a-f]{32}_small\.bin$/, "FILE's name is the default hint");
  assert.ok(readFileSync(landing).equals(readFileSync(small)));
  assert.match(r.stderr, /uploaded .*small\.bin to .*verified, binary carriage/);

  const call = await runCli([
    ...base(),
    "--json",
    "call",
    "pc",
    "demo__sha256_file",
    JSON.stringify({ path: landing }),
  ]);
  assert.equal(call.code, 0, call.stderr);
  const text = (JSON.parse(call.stdout) as { content: { text: string }[] }).content[0]!.text;
  assert.equal(text.split(/\s+/)[0], sha256(readFileSync(small)));
});

void test("put --json --name: one object, the hint sanitized into the name", async () => {
  const r = await runCli([...base(), "--json", "put", "pc", small, "--name", "my report.bin"]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.match(String(j.landing_path), /_my_report\.bin$/);
  assert.equal(j.total_size, 300_000);
  assert.equal(j.sha256, sha256(readFileSync(small)));
  assert.equal(j.carriage, "binary");
  assert.equal(typeof (j.stats as Record<string, unknown>).requests, "number");
});

void test("put: a missing or empty FILE is a usage error; no landing root exits 3", async () => {
  const missing = await runCli([...base(), "put", "pc", join(stack.dir, "nope.bin")]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read '.*nope\.bin': no such file/);
  const empty = join(stack.dir, "empty.bin");
  writeFileSync(empty, "");
  const e = await runCli([...base(), "put", "pc", empty]);
  assert.equal(e.code, 2);
  assert.match(e.stderr, /is empty/);

  const bare = await runCli([...base(), "put", "bare", small]);
  assert.equal(bare.code, 3, bare.stderr);
  assert.match(bare.stderr, /Computer 'bare' takes no uploads: .*\(4019 forbidden\)/);
  assert.match(bare.stderr, /hint: .*--landing-root/);
  const j = await runCli([...base(), "--json", "put", "bare", small]);
  const err = (JSON.parse(j.stdout) as { error: Record<string, unknown> }).error;
  assert.deepEqual([err.code, err.reason], [4019, "forbidden"]);
});

void test("put interrupted (Ctrl-C) exits 130; killed, it leaves no file behind", async () => {
  const before = stored().length;
  const cli = startCli([...base(), "put", "pc", big]);
  await cli.stderrLine(/big\.bin: +\d+% /);
  cli.child.kill("SIGINT");
  const d = await cli.done;
  assert.equal(d.code, 130, d.stderr);
  assert.match(d.stderr, /interrupted: the upload of .*big\.bin was abandoned/);

  const killed = startCli([...base(), "put", "pc", big]);
  await killed.stderrLine(/big\.bin: +\d+% /);
  killed.child.kill("SIGKILL");
  await exited(killed.child);
  assert.equal(stored().length, before, "no stored file from either");
});
