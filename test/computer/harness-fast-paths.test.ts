// @both-transports
/**
 * The Computers of the Computer tests run the transport `testTransport` names: fast (every fast
 * path on) normally, stock (none) under `A2C_TEST_COMPUTER_TRANSPORT=stock` (the second run of
 * every file tagged `@both-transports`, this one included so that a stock run that silently ran
 * the fast paths fails: scripts/run-tests.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FAST_PATHS } from "../../computer/transport/index.ts";
import { ServerHarness } from "../support/server-harness.ts";
import { startHarnessComputer, testTransport } from "./support/harness-computer.ts";

void test("a harness Computer reports every fast path as the test mode says", async () => {
  const dir = mkdtempSync(join(tmpdir(), "a2c-harness-paths-"));
  const h = await ServerHarness.start();
  try {
    const pc = await startHarnessComputer(h, dir, { services: [] });
    try {
      const want = testTransport() === "stock" ? "off" : "on";
      assert.deepEqual(pc.fastPaths, Object.fromEntries(FAST_PATHS.map((p) => [p.name, want])));
    } finally {
      await pc.close();
    }
  } finally {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
