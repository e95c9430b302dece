// `a2c-server`'s transport switches: `--stock-transport` / `A2C_SERVER_TRANSPORT=stock` turn every
// fast path off, `A2C_SERVER_RAW_ACKS` / `_PREFRAME` / `_BATCH_WRITES` / `_FAIR_READS` (0 or 1)
// one each; nothing set leaves startServer's default (all on); bad values are configuration
// errors. A real process started with `A2C_SERVER_TRANSPORT=stock` logs every fast path off.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { ConfigError, configFromArgs } from "../../server/config.ts";

const base = { A2C_TOKENS: "t" };
const fastPaths = async (args: string[], env: Record<string, string> = {}) =>
  (await configFromArgs(args, { ...base, ...env })).fastPaths;

void test("nothing set: startServer's default", async () => {
  assert.equal(await fastPaths([]), undefined);
  assert.equal(await fastPaths([], { A2C_SERVER_TRANSPORT: "fast" }), undefined);
});

void test("--stock-transport and A2C_SERVER_TRANSPORT=stock: every fast path off", async () => {
  assert.equal(await fastPaths(["--stock-transport"]), "none");
  assert.equal(await fastPaths([], { A2C_SERVER_TRANSPORT: "stock" }), "none");
  assert.equal(await fastPaths(["--stock-transport"], { A2C_SERVER_TRANSPORT: "fast" }), "none");
});

void test("one variable per fast path, over the base", async () => {
  assert.deepEqual(await fastPaths([], { A2C_SERVER_RAW_ACKS: "0" }), {
    rawAcks: false,
    ackBytes: true,
    preframe: true,
    batchWrites: true,
    fairReads: true,
  });
  assert.deepEqual(await fastPaths([], { A2C_SERVER_PREFRAME: "0", A2C_SERVER_FAIR_READS: "0" }), {
    rawAcks: true,
    ackBytes: true,
    preframe: false,
    batchWrites: true,
    fairReads: false,
  });
  assert.deepEqual(await fastPaths(["--stock-transport"], { A2C_SERVER_BATCH_WRITES: "1" }), {
    rawAcks: false,
    ackBytes: false,
    preframe: false,
    batchWrites: true,
    fairReads: false,
  });
});

void test("bad values are configuration errors", async () => {
  await assert.rejects(fastPaths([], { A2C_SERVER_TRANSPORT: "fastest" }), ConfigError);
  await assert.rejects(fastPaths([], { A2C_SERVER_RAW_ACKS: "maybe" }), /A2C_SERVER_RAW_ACKS/);
});

void test("a process started with A2C_SERVER_TRANSPORT=stock logs every fast path off", async (t) => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const child = spawn(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "server/main.ts", "--port", "0"],
    {
      cwd: root,
      env: {
        ...process.env,
        ...base,
        A2C_SERVER_TRANSPORT: "stock",
        A2C_LOG_LEVEL: "info",
        A2C_LOG_FORMAT: "json",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
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
  assert.deepEqual(line.transport, {
    raw_acks: "off",
    ack_bytes: "off",
    preframe: "off",
    batch_writes: "off",
    fair_reads: "off",
  });
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});
