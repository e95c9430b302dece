/**
 * `--fast-paths` / `--stock-transport` and their env twins map to `StartComputerOptions.fastPaths`:
 * absent means all on; flags win over env; a name that is not a fast path, both forms at once, or
 * an unknown transport word is a usage error.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const BASE = ["--server", "http://x:1", "--office", "o", "--name", "n"];
const fastPaths = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  parseComputerArgs([...BASE, ...argv], env)!.fastPaths;

void test("absent: every fast path on (the option is left out)", () => {
  assert.equal(fastPaths([]), undefined);
  assert.equal(fastPaths([], { A2C_COMPUTER_TRANSPORT: "fast" }), undefined);
});

void test("all, none, --stock-transport and a list of the paths to keep on", () => {
  assert.equal(fastPaths(["--fast-paths", "all"]), "all");
  assert.equal(fastPaths(["--fast-paths", "none"]), "none");
  assert.equal(fastPaths(["--stock-transport"]), "none");
  assert.deepEqual(fastPaths(["--fast-paths", "lend-buffers, batch-writes"]), {
    lendBuffers: true,
    maskInPlace: false,
    batchWrites: true,
    mcpReadBuffer: false,
  });
});

void test("env twins, and flags win over them", () => {
  assert.equal(fastPaths([], { A2C_COMPUTER_TRANSPORT: "stock" }), "none");
  assert.deepEqual(fastPaths([], { A2C_COMPUTER_FAST_PATHS: "mask-in-place" }), {
    lendBuffers: false,
    maskInPlace: true,
    batchWrites: false,
    mcpReadBuffer: false,
  });
  assert.equal(fastPaths(["--fast-paths", "all"], { A2C_COMPUTER_TRANSPORT: "stock" }), "all");
  assert.equal(fastPaths(["--stock-transport"], { A2C_COMPUTER_FAST_PATHS: "all" }), "none");
});

void test("bad values are usage errors that say what is accepted", () => {
  for (const [argv, env, message] of [
    [["--fast-paths", "mask-in-place,warp"], {}, /lend-buffers, mask-in-place/],
    [["--fast-paths", ","], {}, /takes all, none or names/],
    [["--fast-paths", "all", "--stock-transport"], {}, /exclude each other/],
    [[], { A2C_COMPUTER_TRANSPORT: "turbo" }, /stock or fast/],
    [[], { A2C_COMPUTER_TRANSPORT: "stock", A2C_COMPUTER_FAST_PATHS: "all" }, /exclude/],
    [[], { A2C_COMPUTER_FAST_PATHS: "nope" }, /A2C_COMPUTER_FAST_PATHS takes/],
  ] as const) {
    assert.throws(
      () => fastPaths([...argv], env),
      (err: unknown) => {
        assert.ok(err instanceof UsageError);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});
