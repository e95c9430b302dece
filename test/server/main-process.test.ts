// `a2c-server` (the shipped bin): prints exactly `listening on http://HOST:PORT` (port 0 → the
// real port) and nothing else on stdout, serves, and exits 0 on SIGTERM / SIGINT after leaving
// offices.
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { io } from "socket.io-client";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import { startRole, startServerProcess } from "../../scripts/launch/roles.ts";

async function run(t: TestContext, extraArgs: string[], env: Record<string, string>) {
  const { proc, url } = await startServerProcess({
    args: ["--host", "127.0.0.1", "--port", "0", ...extraArgs],
    env: { A2C_LOG_LEVEL: "info", ...env },
  });
  // Whatever happens in the test, the child does not outlive it.
  t.after(() => proc.kill());
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  return { proc, url, stdout: () => proc.stdout(), stderr: () => proc.stderr() };
}

void test("SIGTERM: listening line, a served connection, clean exit 0", async (t) => {
  const p = await run(t, ["--token", "main-test-token"], {});
  assert.doesNotMatch(p.url, /:0$/);
  const health = await fetch(`${p.url}/healthz`);
  assert.equal(health.status, 200);
  await health.text();
  const socket = io(`${p.url}/smcp`, {
    query: { a2c_version: PROTOCOL_VERSION },
    auth: { token: "main-test-token" },
    forceNew: true,
    reconnection: false,
  });
  t.after(() => socket.disconnect());
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  const ok: unknown = await socket.emitWithAck("server:join_office", {
    role: "computer",
    name: "pc",
    office_id: "o",
  });
  assert.equal(ok, true);
  const disconnected = new Promise<void>((resolve) => socket.once("disconnect", () => resolve()));
  const { code, signal } = await p.proc.stop("SIGTERM", 30_000);
  await disconnected;
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.equal(p.stdout(), `listening on ${p.url}\n`);
  assert.doesNotMatch(p.stderr(), /main-test-token/, "the token never appears in logs");
  // stderr is JSON lines.
  for (const line of p.stderr().trim().split("\n")) JSON.parse(line);
});

void test("SIGINT with --no-auth: loud warning, clean exit 0", async (t) => {
  const p = await run(t, ["--no-auth"], {});
  assert.match(p.stderr(), /WARNING: --no-auth/);
  assert.equal((await p.proc.stop("SIGINT", 30_000)).code, 0);
  assert.equal(p.stdout(), `listening on ${p.url}\n`);
});

void test("no credentials: exit 2 with a usage message", async () => {
  const server = startRole("server", {
    args: ["--port", "0"],
    env: { A2C_TOKENS: "", A2C_TOKENS_FILE: "", A2C_NO_AUTH: "" },
  });
  assert.equal((await server.exited).code, 2);
  assert.match(server.stderr(), /no tokens configured/);
});
