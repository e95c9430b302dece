// @pure
/**
 * `--fd-cache-entries` / `A2C_FD_CACHE_ENTRIES` reach the blob engine's descriptor bound and
 * `--allow-hard-links` / `A2C_ALLOW_HARD_LINKS=1` the skill sandbox (flag wins over env; 0
 * entries allowed = no cache; bad input is a usage error; nothing set when neither is given).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];

void test("descriptor bound: flag, env, flag over env, 0, alongside the unsent bound", () => {
  assert.deepEqual(parseComputerArgs([...base, "--fd-cache-entries", "4"], {})?.blob, {
    fdCacheEntries: 4,
  });
  assert.deepEqual(parseComputerArgs(base, { A2C_FD_CACHE_ENTRIES: "0" })?.blob, {
    fdCacheEntries: 0,
  });
  assert.deepEqual(
    parseComputerArgs([...base, "--fd-cache-entries", "8", "--max-unsent-bytes", "65536"], {
      A2C_FD_CACHE_ENTRIES: "2",
    })?.blob,
    { maxUnsentBytes: 65536, fdCacheEntries: 8 },
  );
  assert.equal(parseComputerArgs(base, {})?.blob, undefined);
  assert.throws(() => parseComputerArgs([...base, "--fd-cache-entries", "-1"], {}), UsageError);
  assert.throws(() => parseComputerArgs([...base, "--fd-cache-entries", "5000"], {}), UsageError);
});

void test("hard links: off unless the flag or A2C_ALLOW_HARD_LINKS=1", () => {
  assert.equal(parseComputerArgs(base, {})?.allowHardLinks, undefined);
  assert.equal(parseComputerArgs([...base, "--allow-hard-links"], {})?.allowHardLinks, true);
  assert.equal(parseComputerArgs(base, { A2C_ALLOW_HARD_LINKS: "1" })?.allowHardLinks, true);
  assert.equal(parseComputerArgs(base, { A2C_ALLOW_HARD_LINKS: "0" })?.allowHardLinks, undefined);
});
