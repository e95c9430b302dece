// @pure
// The outbound bounds on the command line (server/config.ts): flags win over env, 0 turns a bound
// off, bad numbers are configuration errors, and nothing is set when neither is given
// (startServer's defaults then apply: 64 MiB per connection, 512 MiB in all, 8 MiB unread, 30 s
// stall).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, configFromArgs } from "../../server/config.ts";

const AUTH = ["--no-auth"];
const pick = (o: Awaited<ReturnType<typeof configFromArgs>>) => [
  o.maxQueuedBytes,
  o.maxQueuedBytesTotal,
  o.maxUnreadBytes,
  o.outboundStallMs,
];

void test("outbound bounds: unset, env, flags over env, 0", async () => {
  assert.deepEqual(pick(await configFromArgs(AUTH, {})), [
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
  const env = {
    A2C_MAX_QUEUED_BYTES: "1048576",
    A2C_MAX_QUEUED_BYTES_TOTAL: "8388608",
    A2C_MAX_UNREAD_BYTES: "2097152",
    A2C_OUTBOUND_STALL_MS: "5000",
  };
  assert.deepEqual(pick(await configFromArgs(AUTH, env)), [1_048_576, 8_388_608, 2_097_152, 5_000]);
  const flags = ["--max-queued-bytes", "0", "--max-queued-bytes-total", "0"];
  assert.deepEqual(
    pick(
      await configFromArgs(
        [...AUTH, ...flags, "--max-unread-bytes", "0", "--outbound-stall-ms", "0"],
        env,
      ),
    ),
    [0, 0, 0, 0],
  );
});

void test("bad outbound values are configuration errors", async () => {
  for (const argv of [
    ["--max-queued-bytes", "-1"],
    ["--max-queued-bytes", "64MiB"],
    ["--max-queued-bytes-total", "1.5"],
    ["--max-unread-bytes", "-8"],
    ["--outbound-stall-ms", "3000000000"],
  ]) {
    await assert.rejects(configFromArgs([...AUTH, ...argv], {}), ConfigError, argv.join(" "));
  }
});
