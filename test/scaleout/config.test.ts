/**
 * `--redis URL` / `A2C_REDIS_URL` and their companions switch a node to Redis; without them the
 * Server stays in-memory and single-process (without --redis nothing changes).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, configFromArgs } from "../../server/config.ts";
import { MemoryOfficeRegistry } from "../../server/offices.ts";
import { startServer } from "../../server/server.ts";
import { TOKEN, quiet } from "./cluster-harness.ts";

void test("--redis and its companions (flags win over env)", async () => {
  const fromFlags = await configFromArgs(
    [
      "--token",
      "t",
      "--redis",
      "redis://h:6379/2",
      "--redis-prefix",
      "{x}",
      "--redis-adapter",
      "sharded",
    ],
    { A2C_REDIS_URL: "redis://env:1", A2C_REDIS_NODE_TTL_MS: "4000" },
  );
  assert.deepEqual(fromFlags.redis, {
    url: "redis://h:6379/2",
    adapter: "sharded",
    prefix: "{x}",
    nodeTtlMs: 4000,
  });
  const fromEnv = await configFromArgs(["--token", "t"], {
    A2C_REDIS_URL: "rediss://:secret@env:6380",
    A2C_REDIS_PREFIX: "p",
  });
  assert.deepEqual(fromEnv.redis, {
    url: "rediss://:secret@env:6380",
    adapter: "classic",
    prefix: "p",
  });
  assert.equal((await configFromArgs(["--token", "t"], {})).redis, undefined);
});

void test("bad Redis settings are refused with a clear message", async () => {
  const bad: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [["--redis", "http://h:1"], {}, /redis:\/\/ or rediss:\/\//],
    [["--redis", "redis://h:1", "--redis-adapter", "streams"], {}, /classic or sharded/],
    [["--redis-prefix", "p"], {}, /need --redis/],
    [["--redis", "redis://h:1"], { A2C_REDIS_NODE_TTL_MS: "10" }, /A2C_REDIS_NODE_TTL_MS/],
  ];
  for (const [argv, env, message] of bad) {
    await assert.rejects(configFromArgs(["--token", "t", ...argv], env), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, message);
      return true;
    });
  }
});

void test("without redis the Server keeps its in-memory registry", async () => {
  const server = await startServer({ port: 0, tokens: [TOKEN], logger: quiet });
  try {
    assert.ok(server.registry instanceof MemoryOfficeRegistry);
  } finally {
    await server.close();
  }
});
