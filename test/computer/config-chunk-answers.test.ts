// @pure
/**
 * `--relay-timeout-ms` / `A2C_RELAY_TIMEOUT_MS` (the Server's relay window, read under the same
 * variable the Server reads) and `--max-unsent-bytes` / `A2C_MAX_UNSENT_BYTES` reach the chunk
 * scheduler's options (flag wins over env; bad input is a usage error); nothing is set when
 * neither is given (the defaults apply).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];

void test("relay timeout: flag, env, flag over env, default, bad input", () => {
  assert.equal(
    parseComputerArgs([...base, "--relay-timeout-ms", "2500"], {})?.relayTimeoutMs,
    2500,
  );
  const env = { A2C_RELAY_TIMEOUT_MS: "7000" };
  assert.equal(parseComputerArgs(base, env)?.relayTimeoutMs, 7000);
  assert.equal(parseComputerArgs([...base, "--relay-timeout-ms", "9"], env)?.relayTimeoutMs, 9);
  assert.equal(parseComputerArgs(base, {})?.relayTimeoutMs, undefined);
  assert.throws(() => parseComputerArgs([...base, "--relay-timeout-ms", "1.5"], {}), UsageError);
  assert.throws(() => parseComputerArgs([...base, "--relay-timeout-ms", "0"], {}), UsageError);
});

void test("unsent bound: flag, env, flag over env, bad input", () => {
  assert.deepEqual(parseComputerArgs([...base, "--max-unsent-bytes", "65536"], {})?.blob, {
    maxUnsentBytes: 65536,
  });
  const env = { A2C_MAX_UNSENT_BYTES: "100000" };
  assert.deepEqual(parseComputerArgs(base, env)?.blob, { maxUnsentBytes: 100000 });
  assert.deepEqual(parseComputerArgs([...base, "--max-unsent-bytes", "5"], env)?.blob, {
    maxUnsentBytes: 5,
  });
  assert.equal(parseComputerArgs(base, {})?.blob, undefined);
  assert.throws(() => parseComputerArgs([...base, "--max-unsent-bytes", "x"], {}), UsageError);
});
