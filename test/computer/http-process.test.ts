// `a2c-computer --http-port P`: flags and env of the endpoint (off unless a port is given,
// loopback unless a host is given), and the real process serving /healthz 200 once joined and
// leaving cleanly on SIGTERM with the endpoint open.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";
import { startRole } from "../../scripts/launch/roles.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-http-main-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = ["--server", "http://x", "--office", "o", "--name", "n"];

void test("--http-port / A2C_HTTP_PORT turn the endpoint on; host defaults to loopback", () => {
  assert.equal(parseComputerArgs(BASE, {})?.http, undefined, "off by default");
  assert.deepEqual(parseComputerArgs([...BASE, "--http-port", "9464"], {})?.http, { port: 9464 });
  assert.deepEqual(
    parseComputerArgs(BASE, { A2C_HTTP_PORT: "0", A2C_HTTP_HOST: "0.0.0.0" })?.http,
    { port: 0, host: "0.0.0.0" },
  );
  assert.deepEqual(
    parseComputerArgs([...BASE, "--http-port", "1"], { A2C_HTTP_PORT: "2" })?.http,
    { port: 1 },
    "flags win",
  );
  for (const extra of [
    ["--http-port", "65536"],
    ["--http-port", "x"],
    ["--http-host", "0.0.0.0"],
  ]) {
    assert.throws(() => parseComputerArgs([...BASE, ...extra], {}), UsageError, extra.join(" "));
  }
});

void test("the process serves /healthz 200 once joined, then stops cleanly on SIGTERM", async () => {
  const h = await ServerHarness.start();
  const pc = startRole("computer", {
    args: [
      ...["--server", h.url, "--office", "office-1", "--name", "pc-http"],
      ...["--state-dir", join(dir, "state"), "--workers", "0", "--http-port", "0"],
    ],
    env: { A2C_LOG_LEVEL: "info", A2C_TOKEN: TEST_TOKEN },
  });
  try {
    // JSON log lines on stderr: the endpoint's port, then "joined office".
    const listening = await pc.waitFor(/"msg":"http endpoint listening/);
    const port = (JSON.parse(listening.input) as { port?: number }).port ?? 0;
    await pc.waitFor(/"msg":"joined office"/);
    assert.ok(port > 0, "the endpoint logged its port");
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, "ok");
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /^process_resident_memory_bytes\{computer="pc-http"\} \d+/m);
    assert.equal((await pc.stop("SIGTERM", 30_000)).code, 0);
  } finally {
    await pc.kill();
    await h.close();
  }
});
