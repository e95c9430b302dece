// `a2c-server`'s one transport switch: `--stock-transport` / `A2C_SERVER_TRANSPORT=stock` turn every
// fast path off; nothing set (or `fast`) leaves startServer's default (all on); there are no
// per-path variables, and bad values are configuration errors. A real process started with
// `A2C_SERVER_TRANSPORT=stock` logs every fast path off.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { REPO_ROOT, roleCommand } from "../../scripts/launch/roles.ts";
import { ConfigError, configFromArgs } from "../../server/config.ts";

const base = { A2C_TOKENS: "t" };
const transport = async (args: string[], env: Record<string, string> = {}) =>
  (await configFromArgs(args, { ...base, ...env })).transport;

void test("nothing set: startServer's default", async () => {
  assert.equal(await transport([]), undefined);
  assert.equal(await transport([], { A2C_SERVER_TRANSPORT: "fast" }), undefined);
  // The per-path variables of earlier versions are not read.
  assert.equal(await transport([], { A2C_SERVER_RAW_ACKS: "0" }), undefined);
});

void test("--stock-transport and A2C_SERVER_TRANSPORT=stock: every fast path off", async () => {
  assert.equal(await transport(["--stock-transport"]), "stock");
  assert.equal(await transport([], { A2C_SERVER_TRANSPORT: "stock" }), "stock");
  assert.equal(await transport(["--stock-transport"], { A2C_SERVER_TRANSPORT: "fast" }), "stock");
});

void test("bad values are configuration errors", async () => {
  await assert.rejects(transport([], { A2C_SERVER_TRANSPORT: "fastest" }), ConfigError);
});

void test("a process started with A2C_SERVER_TRANSPORT=stock logs every fast path off", async (t) => {
  // The shipped a2c-server (D60).
  const [node, ...args] = roleCommand("server");
  const child = spawn(node!, [...args, "--port", "0"], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      ...base,
      A2C_SERVER_TRANSPORT: "stock",
      A2C_LOG_LEVEL: "info",
      A2C_LOG_FORMAT: "json",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      for (const line of stderr.split("\n")) {
        if (!line.includes('"server listening"')) continue;
        resolve(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  const line = await listening;
  assert.deepEqual(line.fastPaths, { raw_acks: "off", raw_uploads: "off", batch_writes: "off" });
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});
