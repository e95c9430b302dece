// The Server's wire contract holds with every transport fast path off: the whole Server suite
// (test/server) runs again, as a child test run, with `A2C_TEST_SERVER_TRANSPORT=stock`, so every
// harness Server runs socket.io, engine.io and ws exactly as shipped (`transport: "stock"`). Tests
// of one fast path's mechanism skip themselves there; every other test must pass both ways.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const root = fileURLToPath(new URL("../..", import.meta.url));

void test("test/server passes with the stock transport", async (t) => {
  const child = spawn(process.execPath, ["scripts/run-tests.mjs", "test/server"], {
    cwd: root,
    env: {
      ...process.env,
      // The child is a test run of its own, not a subtest of this one.
      NODE_TEST_CONTEXT: undefined,
      A2C_TEST_SERVER_TRANSPORT: "stock",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  const summary = output.split("\n").filter((l) => /^ℹ (tests|pass|fail|skipped) /.test(l));
  const failed = output.slice(output.indexOf("✖ failing tests:"));
  assert.equal(code, 0, `stock run failed:\n${summary.join("\n")}\n${failed.slice(0, 8000)}`);
  const passed = Number(/^ℹ pass (\d+)/m.exec(output)?.[1] ?? 0);
  assert.ok(passed > 100, `only ${passed} tests passed in the stock run`);
});
