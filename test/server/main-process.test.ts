// `npm run server`: prints exactly `listening on http://HOST:PORT` (port 0 → the real port) and
// nothing else on stdout, serves, and exits 0 on SIGTERM / SIGINT after leaving offices.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { test, type TestContext } from "node:test";
import { io } from "socket.io-client";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function run(t: TestContext, extraArgs: string[], env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    [
      "--conditions=@a2c-smcp/source",
      "--import",
      "tsx",
      "server/main.ts",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      ...extraArgs,
    ],
    { cwd: ROOT, env: { ...process.env, A2C_LOG_LEVEL: "info", ...env }, stdio: "pipe" },
  );
  // Whatever happens in the test, the child does not outlive it.
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  return { child, url, stdout: () => stdout, stderr: () => stderr };
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
  p.child.kill("SIGTERM");
  const [code, signal] = (await once(p.child, "exit")) as [number | null, string | null];
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
  p.child.kill("SIGINT");
  const [code] = (await once(p.child, "exit")) as [number | null];
  assert.equal(code, 0);
  assert.equal(p.stdout(), `listening on ${p.url}\n`);
});

void test("no credentials: exit 2 with a usage message", async () => {
  const child = spawn(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "server/main.ts", "--port", "0"],
    {
      cwd: ROOT,
      env: { ...process.env, A2C_TOKENS: "", A2C_TOKENS_FILE: "", A2C_NO_AUTH: "" },
      stdio: "pipe",
    },
  );
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 2);
  assert.match(stderr, /no tokens configured/);
});
