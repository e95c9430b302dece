// @pure
/**
 * `--skill-watch-entries` / `A2C_SKILL_WATCH_ENTRIES` (entries of one skill package read per
 * change scan, D58): flag wins over env, at least 1, unset when neither is given.
 * watch-large-package.test.ts sees it reach the watcher.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];

void test("skill watch cap: flag, env, flag over env, bad values refused", () => {
  assert.equal(parseComputerArgs(base, {})?.skillWatchEntries, undefined);
  assert.equal(
    parseComputerArgs([...base, "--skill-watch-entries", "50000"], {})?.skillWatchEntries,
    50_000,
  );
  assert.equal(parseComputerArgs(base, { A2C_SKILL_WATCH_ENTRIES: "300" })?.skillWatchEntries, 300);
  assert.equal(
    parseComputerArgs([...base, "--skill-watch-entries", "7"], { A2C_SKILL_WATCH_ENTRIES: "300" })
      ?.skillWatchEntries,
    7,
  );
  assert.throws(() => parseComputerArgs([...base, "--skill-watch-entries", "0"], {}), UsageError);
  assert.throws(() => parseComputerArgs([...base, "--skill-watch-entries", "x"], {}), UsageError);
});
