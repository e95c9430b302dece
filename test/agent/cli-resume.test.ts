/**
 * A download outlives its process (D85): the CLI (the shipped build, a process of its own)
 * pulls a 12 MiB skill file from a real Server and Computer at `--limit-rate 8M` (2M before a
 * SIGKILL), so it is half way after 0.75 s (3 s) on any machine that pulls faster; it is stopped
 * when its progress line says 50 % by SIGINT, SIGTERM or SIGKILL, and a rerun with `-c` moves at
 * most 0.55× the file and verifies, also after a restart of the Computer or through another
 * Server (handles are stateless, D14); after a rewrite of the source in between it starts again
 * from 0 with one note and verifies; a rerun without `-c` replaces the partial file. After each,
 * the directory holds the target and nothing else. The bytes moved are the rerun's own count
 * (`--json` stats). `--limit-rate 2M` holds within ±5 % over 10 s, measured between two of its
 * progress lines.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { AgentClient } from "../../agent/client.ts";
import {
  inProcessComputer,
  runCli,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";
import { startCli } from "../support/cli-process.ts";
import { ServerHarness } from "../support/server-harness.ts";

const MiB = 1024 * 1024;
const SIZE = 12 * MiB;
const RATE_FILE = 26 * MiB;

let stack: AgentStack;
let computer: RunningComputer;
let root: string;
let sha: string;
let runs = 0;

before(async () => {
  stack = await startAgentStack();
  root = await writeSkill(stack.home, "files", "Files.");
  sha = await writeRandomFile(join(root, "data.bin"), SIZE);
  await writeRandomFile(join(root, "big.bin"), RATE_FILE);
  computer = await inProcessComputer(stack, "pc");
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

const server = (): string[] => ["--server", stack.url, "--office", stack.office];
const skillArgs = (file: string, rel = "data.bin"): string[] => [
  ...server(),
  ...["--token", stack.token, "skill", "pc", "files", rel, "-o", file],
];

/** A directory of its own for one case, and the target in it. */
async function target(name: string): Promise<{ dir: string; file: string }> {
  const dir = join(stack.dir, `out-${++runs}`);
  await mkdir(dir);
  return { dir, file: join(dir, name) };
}

async function sha256Of(file: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
}

/** Starts a rate-capped download and stops it by `signal` once its progress line says `pct`. */
async function interrupt(
  args: string[],
  signal: NodeJS.Signals,
  pct = /: +5\d% /,
): Promise<{ code: number | null; stderr: string }> {
  // What SIGKILL loses (received, not yet written) grows with the rate: it keeps the slower one.
  const cli = startCli([...args, "--limit-rate", signal === "SIGKILL" ? "2M" : "8M"]);
  await cli.stderrLine(pct);
  cli.child.kill(signal);
  const r = await cli.done;
  if (signal === "SIGKILL") assert.equal(r.signal, "SIGKILL");
  return r;
}

interface Stats {
  bytes_received: number;
  resumed_from: number;
}

/** Reruns with `--json` (and `-c` when asked): exit 0, the answer's stats. */
async function rerun(args: string[]): Promise<{ stats: Stats; stderr: string }> {
  const r = await runCli([...args, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return { stats: (JSON.parse(r.stdout) as { stats: Stats }).stats, stderr: r.stderr };
}

for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGKILL", null],
] as const) {
  void test(`${signal} at 50 %: a rerun with -c moves at most 0.55x the file and verifies`, async () => {
    const { dir, file } = await target("data.bin");
    const r = await interrupt(skillArgs(file), signal);
    assert.equal(r.code, code);
    if (code !== null) {
      assert.match(
        r.stderr.split("\n").at(-2)!,
        new RegExp(`is kept in ${file}\\.a2c-part \\(-c resumes it\\)$`),
      );
    }
    assert.deepEqual(await readdir(dir), ["data.bin.a2c-part"]);
    const { stats } = await rerun([...skillArgs(file), "-c"]);
    console.log(
      `${signal}: rerun with -c moved ${(stats.bytes_received / SIZE).toFixed(3)}x the file ` +
        `(resumed from ${(stats.resumed_from / SIZE).toFixed(3)})`,
    );
    assert.ok(stats.resumed_from >= 0.4 * SIZE, `resumed from ${stats.resumed_from}`);
    assert.ok(stats.bytes_received <= 0.55 * SIZE, `moved ${stats.bytes_received}`);
    assert.equal(await sha256Of(file), sha);
    assert.deepEqual(await readdir(dir), ["data.bin"]);
  });
}

void test("a restart of the Computer in between: -c resumes with the handle minted before", async () => {
  const agent = new AgentClient({ url: stack.url, token: stack.token, name: "minter" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  const handle = (await agent.getSkillRaw("pc", "files", "data.bin")).blob_handle!;
  await agent.close();
  const { dir, file } = await target("data.bin");
  const blobArgs = [...server(), "--token", stack.token, "blob", "pc", handle, "-o", file];
  await interrupt(blobArgs, "SIGINT");
  await computer.close();
  computer = await inProcessComputer(stack, "pc"); // the same state directory: the same key (D14)
  const { stats } = await rerun([...blobArgs, "-c"]);
  assert.ok(stats.bytes_received <= 0.55 * SIZE, `moved ${stats.bytes_received}`);
  assert.equal(await sha256Of(file), sha);
  assert.deepEqual(await readdir(dir), ["data.bin"]);
});

void test("another Server in between (a restart, another node): -c resumes through it", async () => {
  const agent = new AgentClient({ url: stack.url, token: stack.token, name: "minter-2" });
  await agent.connect();
  await agent.joinOffice(stack.office);
  const handle = (await agent.getSkillRaw("pc", "files", "data.bin")).blob_handle!;
  await agent.close();
  const { dir, file } = await target("data.bin");
  const blobArgs = (url: string): string[] => [
    ...["--server", url, "--office", stack.office, "--token", stack.token],
    ...["blob", "pc", handle, "-o", file],
  ];
  await interrupt(blobArgs(stack.url), "SIGTERM");
  // A second Server, and the same Computer (its state directory, so its key) joined to it.
  const other = await ServerHarness.start({ tokens: [stack.token] });
  const there = await inProcessComputer({ ...stack, harness: other, url: other.url }, "pc");
  try {
    const { stats } = await rerun([...blobArgs(other.url), "-c"]);
    assert.ok(stats.bytes_received <= 0.55 * SIZE, `moved ${stats.bytes_received}`);
    assert.equal(await sha256Of(file), sha);
    assert.deepEqual(await readdir(dir), ["data.bin"]);
  } finally {
    await there.close();
    await other.close();
  }
});

void test("the source rewritten in between: -c starts again from 0 with one note, verifies", async () => {
  const { dir, file } = await target("data.bin");
  await interrupt(skillArgs(file), "SIGINT");
  sha = await writeRandomFile(join(root, "data.bin"), SIZE);
  const { stats, stderr } = await rerun([...skillArgs(file), "-c"]);
  assert.equal(stats.resumed_from, 0);
  assert.ok(stats.bytes_received >= SIZE);
  const notes = stderr.split("\n").filter((l) => l.includes(".a2c-part"));
  assert.equal(notes.length, 1, stderr);
  assert.match(
    notes[0]!,
    /holds other content .*: the source changed since; starting again from 0$/,
  );
  assert.equal(await sha256Of(file), sha);
  assert.deepEqual(await readdir(dir), ["data.bin"]);
});

void test("without -c a leftover partial file is replaced", async () => {
  const { dir, file } = await target("data.bin");
  await interrupt(skillArgs(file), "SIGINT", /: +[1-9]\d% /);
  const { stats, stderr } = await rerun(skillArgs(file));
  assert.equal(stats.resumed_from, 0);
  assert.ok(stats.bytes_received >= SIZE);
  assert.doesNotMatch(stderr, /a2c-part/);
  assert.equal(await sha256Of(file), sha);
  assert.deepEqual(await readdir(dir), ["data.bin"]);
});

void test("--limit-rate 2M holds within 5 % over 10 s", async () => {
  const { file } = await target("big.bin");
  const cli = startCli([...skillArgs(file, "big.bin"), "--limit-rate", "2M"]);
  /** The time a progress line was seen, and the bytes it says were held. */
  /** The line of the decile `pct` (a pattern: the line says the percentage when it was crossed). */
  const seen = async (pct: string): Promise<{ t: number; bytes: number }> => {
    const line = await cli.stderrLine(new RegExp(`: +${pct}% `));
    const t = performance.now();
    const mib = /% ([\d.]+) MiB\//.exec(line);
    return { t, bytes: Number(mib![1]) * MiB };
  };
  const from = await seen("1\\d");
  const to = await seen("9\\d");
  const r = await cli.done;
  assert.equal(r.code, 0, r.stderr);
  const seconds = (to.t - from.t) / 1000;
  const rate = (to.bytes - from.bytes) / seconds;
  console.log(`--limit-rate 2M: ${(rate / MiB).toFixed(3)} MiB/s over ${seconds.toFixed(1)} s`);
  assert.ok(seconds >= 10, `a window of ${seconds} s`);
  assert.ok(Math.abs(rate / (2 * MiB) - 1) <= 0.05, `${rate} bytes a second`);
  assert.equal(basename(file), "big.bin");
});
