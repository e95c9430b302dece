/**
 * The Computer's conformance tests pass on the stock transport too: every fast path off
 * (computer/transport/index.ts), i.e. the client libraries' own behaviour, as a Computer runs when a
 * library upgrade makes a fast path unavailable or an operator passes `--stock-transport`. The
 * Computer tests read `A2C_TEST_COMPUTER_TRANSPORT=stock` (test/computer/support/
 * harness-computer.ts); `harness-fast-paths.test.ts` fails if the run did not really go stock.
 * The tests of each fast path's mechanism choose their paths themselves and are not rerun here;
 * nor are the tests of joining and the HTTP endpoint, which no fast path touches.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { REPO_ROOT } from "../support/agent-stack.ts";

const FILES = [
  "harness-fast-paths",
  "connect",
  "dispatch",
  "unknown-events",
  "get-blob",
  "limits",
  "server-pull",
  "stale-chunk-busy",
  "skills/e2e-server",
  "tools/e2e-server",
].map((f) => `test/computer/${f}.test.ts`);

void test("the Computer's conformance tests pass with every fast path off", async () => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    A2C_TEST_COMPUTER_TRANSPORT: "stock",
    TEST_CONCURRENCY: process.env.TEST_CONCURRENCY ?? "2",
  };
  delete env.NODE_TEST_CONTEXT; // a test run of its own, not a subtest of this one
  const child = spawn(process.execPath, ["scripts/run-tests.mjs", ...FILES], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 0, `stock-transport run failed:\n${output.slice(-20_000)}`);
  assert.match(output, /ℹ fail 0/);
});
