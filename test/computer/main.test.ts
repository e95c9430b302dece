/**
 * `a2c-computer`: flags and env (flags win), usage errors (exit 2), and the real process
 * joining its office and leaving cleanly on SIGTERM (exit 0).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";
import { startRole } from "../../scripts/launch/roles.ts";
import { ServerHarness, TEST_TOKEN, waitFor } from "../support/server-harness.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-main-"));
after(() => rmSync(dir, { recursive: true, force: true }));

void test("flags win over env; env fills the rest; integers are checked", () => {
  const env = {
    A2C_SERVER_URL: "http://env:1",
    A2C_OFFICE_ID: "env-office",
    A2C_COMPUTER_NAME: "env-name",
    A2C_TOKEN: "env-token",
    A2C_WORKERS: "3",
    A2C_MAX_HTTP_BUFFER_SIZE: "2000000",
  };
  assert.deepEqual(parseComputerArgs(["--name", "flag-name", "--workers", "0"], env), {
    server: "http://env:1",
    office: "env-office",
    name: "flag-name",
    token: "env-token",
    workers: 0,
    maxHttpBufferSize: 2_000_000,
  });
  assert.equal(parseComputerArgs(["--help"], {}), null);
  for (const argv of [
    [],
    ["--server", "not a url", "--office", "o", "--name", "n"],
    ["--server", "http://x", "--office", "o", "--name", "n", "--workers", "-1"],
    ["--server", "http://x", "--office", "o", "--name", "n", "--inline-budget", "1.5"],
    ["--server", "http://x", "--office", "o", "--name", "n", "--bogus"],
  ]) {
    assert.throws(() => parseComputerArgs(argv, {}), UsageError, argv.join(" "));
  }
});

void test("bad usage exits 2 with the usage text", async () => {
  const pc = startRole("computer", {
    args: ["--office", "o"],
    env: { A2C_LOG_LEVEL: "silent", A2C_SERVER_URL: "" },
  });
  assert.equal((await pc.exited).code, 2);
  assert.match(pc.stderr(), /missing --server, --name/);
});

void test("the process joins its office and leaves cleanly on SIGTERM", async () => {
  const h = await ServerHarness.start();
  try {
    const agent = await h.agent("office-1", "agent-1");
    const entered = waitFor<{ computer?: string }>(
      agent,
      "notify:enter_office",
      (n) => n.computer === "pc-main",
      30_000,
    );
    const pc = startRole("computer", {
      args: [
        ...["--server", h.url, "--office", "office-1", "--name", "pc-main"],
        ...["--state-dir", join(dir, "state"), "--workers", "0"],
      ],
      env: { A2C_LOG_LEVEL: "silent", A2C_TOKEN: TEST_TOKEN },
    });
    await entered;
    const left = waitFor<{ computer?: string }>(
      agent,
      "notify:leave_office",
      (n) => n.computer === "pc-main",
    );
    assert.equal((await pc.stop("SIGTERM", 30_000)).code, 0);
    await left;
  } finally {
    await h.close();
  }
});
