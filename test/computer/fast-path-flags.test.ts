/**
 * `--stock-transport`, `A2C_COMPUTER_TRANSPORT` and the per-path variables map to
 * `StartComputerOptions.fastPaths`: absent means all on; stock turns all off; a path's own
 * variable (0 or 1) overrides either for that path; anything else is a usage error. The usage
 * text names every variable.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fastPathEnv, parseComputerArgs, USAGE, UsageError } from "../../computer/config.ts";
import { FAST_PATH_NAMES } from "../../computer/fast-paths.ts";

const BASE = ["--server", "http://x:1", "--office", "o", "--name", "n"];
const fastPaths = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  parseComputerArgs([...BASE, ...argv], env)!.fastPaths;

void test("absent: every fast path on (the option is left out)", () => {
  assert.equal(fastPaths([]), undefined);
  assert.equal(fastPaths([], { A2C_COMPUTER_TRANSPORT: "fast" }), undefined);
});

void test("--stock-transport or A2C_COMPUTER_TRANSPORT=stock: every fast path off", () => {
  assert.equal(fastPaths(["--stock-transport"]), "none");
  assert.equal(fastPaths([], { A2C_COMPUTER_TRANSPORT: "stock" }), "none");
});

void test("a path's own variable overrides the default and stock, one by one", () => {
  assert.deepEqual(fastPaths([], { A2C_COMPUTER_MASK_IN_PLACE: "0" }), {
    lendBuffers: true,
    maskInPlace: false,
    batchWrites: true,
    mcpReadBuffer: true,
  });
  assert.deepEqual(fastPaths(["--stock-transport"], { A2C_COMPUTER_BATCH_WRITES: "1" }), {
    lendBuffers: false,
    maskInPlace: false,
    batchWrites: true,
    mcpReadBuffer: false,
  });
});

void test("bad values are usage errors that say what is accepted", () => {
  for (const [env, message] of [
    [{ A2C_COMPUTER_TRANSPORT: "turbo" }, /A2C_COMPUTER_TRANSPORT must be stock or fast/],
    [{ A2C_COMPUTER_LEND_BUFFERS: "maybe" }, /A2C_COMPUTER_LEND_BUFFERS must be 0 or 1/],
  ] as const) {
    assert.throws(
      () => fastPaths([], env),
      (err: unknown) => {
        assert.ok(err instanceof UsageError);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});

void test("the usage text names every fast path's variable", () => {
  for (const name of FAST_PATH_NAMES) assert.ok(USAGE.includes(fastPathEnv(name)), name);
});
