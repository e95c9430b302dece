// @pure
// D4 configuration: the tokens file format, env/flag merging, --no-auth, and refusal to start
// without any credential source.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseTokensFile, TokenAuthProvider } from "../../server/auth.ts";
import { ConfigError, configFromArgs } from "../../server/config.ts";
import { startServer } from "../../server/server.ts";

void test("tokens file: comments, blank lines, scopes", () => {
  const grants = parseTokensFile("# comment\n\n  tok-a  \ntok-b office-1,office-2\r\ntok-c ,x,\n");
  assert.deepEqual(grants, [
    { token: "tok-a" },
    { token: "tok-b", offices: ["office-1", "office-2"] },
    { token: "tok-c", offices: ["x"] },
  ]);
  assert.throws(() => parseTokensFile("a b c\n"), /line 1/);
});

void test("a file error never echoes a token", () => {
  try {
    parseTokensFile("secret-token-value office-1 extra\n");
    assert.fail("should throw");
  } catch (err) {
    assert.doesNotMatch((err as Error).message, /secret-token-value/);
  }
});

void test("flags, env and file merge; flags win over env for scalars", async () => {
  const dir = await mkdtemp(join(tmpdir(), "a2c-auth-"));
  try {
    const file = join(dir, "tokens");
    await writeFile(file, "file-token office-9\n");
    const opts = await configFromArgs(
      ["--token", "flag-token", "--port", "0", "--tokens-file", file],
      {
        A2C_TOKENS: "env-1, env-2",
        A2C_PORT: "9999",
        A2C_HOST: "127.0.0.1",
        A2C_RELAY_TIMEOUT_MS: "1234",
      },
    );
    assert.equal(opts.port, 0);
    assert.equal(opts.host, "127.0.0.1");
    assert.equal(opts.relayTimeoutMs, 1234);
    assert.deepEqual(opts.tokens, [
      { token: "flag-token" },
      { token: "env-1" },
      { token: "env-2" },
      { token: "file-token", offices: ["office-9"] },
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test("no credential source and no --no-auth is a configuration error", async () => {
  await assert.rejects(configFromArgs([], {}), ConfigError);
  await assert.rejects(startServer({ port: 0 }), /no tokens/);
  assert.equal((await configFromArgs(["--no-auth"], {})).noAuth, true);
  assert.equal((await configFromArgs([], { A2C_NO_AUTH: "1" })).noAuth, true);
});

void test("bad numbers and unknown flags are configuration errors", async () => {
  await assert.rejects(configFromArgs(["--no-auth", "--port", "abc"], {}), ConfigError);
  await assert.rejects(configFromArgs(["--no-auth", "--port", "70000"], {}), ConfigError);
  await assert.rejects(configFromArgs(["--no-auth", "--bogus"], {}), ConfigError);
});

void test("tokens with whitespace are refused at configuration time", () => {
  assert.throws(() => new TokenAuthProvider([{ token: "has space" }]));
  assert.throws(() => new TokenAuthProvider([]));
});
