// @pure
// The per-client limits (protocol.md §5.5) on the command line: `npm run server` defaults to 100
// connections per address and 2000 events a second per socket; flags win over env; 0 turns a
// limit off; bad numbers are configuration errors. startServer() alone defaults to no limit.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CLI_LIMIT_DEFAULTS, ConfigError, configFromArgs } from "../../server/config.ts";

const AUTH = ["--no-auth"];

void test("CLI defaults, env, flags and 0", async () => {
  const dflt = await configFromArgs(AUTH, {});
  assert.equal(dflt.maxConnectionsPerIp, 100);
  assert.equal(dflt.maxEventsPerSecond, 2000);
  assert.deepEqual(CLI_LIMIT_DEFAULTS, { maxConnectionsPerIp: 100, maxEventsPerSecond: 2000 });
  assert.equal(dflt.eventsBurst, undefined, "burst follows the rate unless set");
  assert.equal(dflt.exemptLoopback, undefined, "loopback exempt (startServer's default)");
  assert.equal((await configFromArgs([...AUTH, "--limit-loopback"], {})).exemptLoopback, false);
  assert.equal((await configFromArgs(AUTH, { A2C_LIMIT_LOOPBACK: "1" })).exemptLoopback, false);

  const env = {
    A2C_MAX_CONNECTIONS_PER_IP: "0",
    A2C_MAX_EVENTS_PER_SECOND: "100",
    A2C_EVENTS_BURST: "300",
  };
  const fromEnv = await configFromArgs(AUTH, env);
  assert.deepEqual(
    [fromEnv.maxConnectionsPerIp, fromEnv.maxEventsPerSecond, fromEnv.eventsBurst],
    [0, 100, 300],
  );
  const flags = await configFromArgs(
    [...AUTH, "--max-connections-per-ip", "7", "--max-events-per-second", "0"],
    env,
  );
  assert.deepEqual([flags.maxConnectionsPerIp, flags.maxEventsPerSecond], [7, 0]);
});

void test("bad limit values are configuration errors", async () => {
  for (const argv of [
    ["--max-connections-per-ip", "-1"],
    ["--max-connections-per-ip", "many"],
    ["--max-events-per-second", "1.5"],
    ["--events-burst", "0"],
  ]) {
    await assert.rejects(configFromArgs([...AUTH, ...argv], {}), ConfigError, argv.join(" "));
  }
});
