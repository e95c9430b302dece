/**
 * The SDK logs only to a logger it is given: with one, a corrupt cache entry is reported there;
 * without one, importing and using the SDK writes nothing to stderr and loads no pino (the CLI's
 * logger stays the CLI's).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { BlobCache, type AgentLogger } from "../../agent/index.ts";
import { compileScript } from "../../scripts/launch/compile.ts";

void test("a corrupt cache entry is reported to the logger the cache was given", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "a2c-sdk-logger-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const sha256 = createHash("sha256").update("the real bytes").digest("hex");
  const entry = join(dir, sha256.slice(0, 2), sha256);
  mkdirSync(join(dir, sha256.slice(0, 2)));
  writeFileSync(entry, "corrupt bytes!");
  const lines: { level: string; obj: object; msg: string }[] = [];
  const logger: AgentLogger = {
    info: (obj, msg) => lines.push({ level: "info", obj, msg }),
    warn: (obj, msg) => lines.push({ level: "warn", obj, msg }),
  };
  assert.equal(await new BlobCache(dir, { logger }).lookup(sha256), null);
  assert.deepEqual(lines, [
    { level: "warn", obj: { sha256 }, msg: "cache entry failed verification; removed" },
  ]);
  assert.equal(existsSync(entry), false);
});

void test("without a logger the SDK writes nothing to stderr and loads no pino", async () => {
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    [await compileScript("test/agent/fixtures/sdk-quiet-child.ts")],
    // A level that would print the warning if the SDK still had a logger of its own.
    { env: { ...process.env, NODE_TEST_CONTEXT: "", A2C_LOG_LEVEL: "info" } },
  );
  assert.deepEqual(JSON.parse(stdout), { hit: null, pino: [] });
  assert.equal(stderr, "");
});
