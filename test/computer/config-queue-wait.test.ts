/**
 * `--blob-queue-wait-ms` / `A2C_BLOB_QUEUE_WAIT_MS` reach the blob engine's options (flag wins
 * over env; 0 allowed = no wait bound; a non-integer is a usage error), and nothing is set when
 * neither is given (the engine's default applies).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];

void test("blob queue wait: flag, env, flag over env, 0, default, bad input", () => {
  assert.deepEqual(parseComputerArgs([...base, "--blob-queue-wait-ms", "2500"], {})?.blob, {
    maxQueueWaitMs: 2500,
  });
  assert.deepEqual(parseComputerArgs(base, { A2C_BLOB_QUEUE_WAIT_MS: "7000" })?.blob, {
    maxQueueWaitMs: 7000,
  });
  assert.deepEqual(
    parseComputerArgs([...base, "--blob-queue-wait-ms", "0"], { A2C_BLOB_QUEUE_WAIT_MS: "7000" })
      ?.blob,
    { maxQueueWaitMs: 0 },
  );
  assert.equal(parseComputerArgs(base, {})?.blob, undefined);
  assert.throws(() => parseComputerArgs([...base, "--blob-queue-wait-ms", "1.5"], {}), UsageError);
});
