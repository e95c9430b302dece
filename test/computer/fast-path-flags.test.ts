// @pure
/**
 * `--stock-transport` and `A2C_COMPUTER_TRANSPORT` map to `StartComputerOptions.transport`:
 * absent means the default (fast); either turns the stock transport on; anything else is a usage
 * error. There are no per-path variables: a leftover one changes nothing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, USAGE, UsageError } from "../../computer/config.ts";

const BASE = ["--server", "http://x:1", "--office", "o", "--name", "n"];
const transport = (argv: string[], env: NodeJS.ProcessEnv = {}) =>
  parseComputerArgs([...BASE, ...argv], env)!.transport;

void test("absent or fast: the option is left out (the default, fast)", () => {
  assert.equal(transport([]), undefined);
  assert.equal(transport([], { A2C_COMPUTER_TRANSPORT: "fast" }), undefined);
  assert.equal(transport([], { A2C_COMPUTER_MASK_IN_PLACE: "0" }), undefined);
});

void test("--stock-transport or A2C_COMPUTER_TRANSPORT=stock: stock", () => {
  assert.equal(transport(["--stock-transport"]), "stock");
  assert.equal(transport([], { A2C_COMPUTER_TRANSPORT: "stock" }), "stock");
  assert.equal(transport(["--stock-transport"], { A2C_COMPUTER_TRANSPORT: "fast" }), "stock");
});

void test("a bad value is a usage error that says what is accepted", () => {
  assert.throws(
    () => transport([], { A2C_COMPUTER_TRANSPORT: "turbo" }),
    (err: unknown) =>
      err instanceof UsageError && /A2C_COMPUTER_TRANSPORT must be stock or fast/.test(err.message),
  );
  assert.match(USAGE, /--stock-transport/);
  assert.doesNotMatch(USAGE, /A2C_COMPUTER_(LEND|MASK|BATCH|MCP)/);
});
