// @pure
/**
 * `--content-codings` / `A2C_CONTENT_CODINGS` (D64) reach the blob engine's compression options:
 * a list of the codings this Computer applies, `none` for none, the flag over the env; an
 * unknown coding or an empty list is a usage error that names what is allowed; nothing is set
 * when neither is given (every coding applies).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];
const codings = (argv: string[], env: NodeJS.ProcessEnv = {}): unknown =>
  parseComputerArgs([...base, ...argv], env)?.blob?.compression?.codings;

void test("a list, none, the env, the flag over the env, nothing by default", () => {
  assert.deepEqual(codings(["--content-codings", "br"]), ["br"]);
  assert.deepEqual(codings(["--content-codings", " GZIP, br ,gzip"]), ["gzip", "br"]);
  assert.deepEqual(codings(["--content-codings", "none"]), []);
  assert.deepEqual(codings([], { A2C_CONTENT_CODINGS: "deflate" }), ["deflate"]);
  assert.deepEqual(codings(["--content-codings", "br"], { A2C_CONTENT_CODINGS: "none" }), ["br"]);
  assert.equal(parseComputerArgs(base, {})?.blob, undefined);
});

void test("an unknown coding or an empty list is a usage error naming the choices", () => {
  assert.throws(
    () => codings(["--content-codings", "br,zstd"]),
    (e: unknown) =>
      e instanceof UsageError && /none or a list of br, gzip, deflate; got "zstd"/.test(e.message),
  );
  assert.throws(() => codings(["--content-codings", ","]), UsageError);
  assert.throws(() => codings(["--content-codings", "none,br"]), UsageError);
});
