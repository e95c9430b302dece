/**
 * A download resumes across Server nodes (D85): the CLI (the shipped build) pulls a 12 MiB skill
 * file from a real Computer on node A through node A at `--limit-rate 2M`, is stopped (SIGTERM:
 * it records every byte it holds, D86) when its progress line says 50 %, and `-c` continues it
 * through node B of the same Redis-backed cluster (the chunks cross the adapter): the rerun moves
 * at most 0.55× the file, the file verifies, and the directory holds the target and nothing else.
 * (SIGKILL at 50 %, whose record may lag the bytes by a write batch, is test/agent/cli-resume's.)
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { runCli } from "../support/agent-stack.ts";
import { startCli } from "../support/cli-process.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import {
  TOKEN,
  computer,
  removeHome,
  skillHome,
  startNode,
  type SkillHome,
  type TestNode,
} from "./cluster-harness.ts";

const MiB = 1024 * 1024;
const SIZE = 12 * MiB;
const OFFICE = "office-resume-nodes";
let redis: RedisInstance;
let a: TestNode;
let b: TestNode;
let home: SkillHome;
let pc: RunningComputer;

before(async () => {
  redis = await startRedis();
  home = await skillHome(SIZE);
  a = await startNode(redis.url, { prefix: "resume" });
  b = await startNode(redis.url, { prefix: "resume" });
  pc = await computer(a.url, OFFICE, "pc-a", home);
});
after(async () => {
  await pc?.close();
  await a?.close();
  await b?.close();
  await redis?.stop();
  if (home) await removeHome(home);
});

const skillArgs = (url: string, file: string): string[] => [
  ...["--server", url, "--office", OFFICE, "--token", TOKEN],
  ...["skill", "pc-a", "big", "data.bin", "-o", file],
];

void test("stopped at 50 % through node A, -c through node B moves at most 0.55x and verifies", async () => {
  const dir = join(home.dir, "out");
  await mkdir(dir);
  const file = join(dir, "data.bin");
  const cli = startCli([...skillArgs(a.url, file), "--limit-rate", "2M"]);
  await cli.stderrLine(/: +5\d% /);
  cli.child.kill("SIGTERM");
  assert.equal((await cli.done).code, 143);
  assert.deepEqual(await readdir(dir), ["data.bin.a2c-part"]);

  const r = await runCli([...skillArgs(b.url, file), "-c", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const { stats } = JSON.parse(r.stdout) as {
    stats: { bytes_received: number; resumed_from: number };
  };
  console.log(
    `through node B: moved ${(stats.bytes_received / SIZE).toFixed(3)}x the file ` +
      `(resumed from ${(stats.resumed_from / SIZE).toFixed(3)})`,
  );
  assert.ok(stats.resumed_from >= 0.4 * SIZE, `resumed from ${stats.resumed_from}`);
  assert.ok(stats.bytes_received <= 0.55 * SIZE, `moved ${stats.bytes_received}`);
  const got = createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
  assert.equal(got, home.sha256);
  assert.deepEqual(await readdir(dir), ["data.bin"]);
});
