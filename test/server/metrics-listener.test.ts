/**
 * `/metrics` on a listener of its own (`metricsListen`, `--metrics-port` / `--metrics-host`):
 * served there, no longer on the client port (where `/healthz` stays); without the option,
 * unchanged on the client port. Real Servers on port 0.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { configFromArgs } from "../../server/config.ts";
import { ServerHarness } from "../support/server-harness.ts";

void test("metricsListen: /metrics on its own port, 404 on the client port", async () => {
  const h = await ServerHarness.start({ metricsListen: { host: "127.0.0.1", port: 0 } });
  try {
    const url = new URL(h.server.metricsUrl);
    assert.equal(url.pathname, "/metrics");
    assert.notEqual(url.port, String(h.server.port));
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^# TYPE a2c_connections gauge$/m);
    assert.equal((await fetch(`${h.url}/metrics`)).status, 404);
    assert.equal((await fetch(`${h.url}/healthz`)).status, 200);
    assert.equal(
      (await fetch(new URL("/healthz", url))).status,
      404,
      "that port serves /metrics only",
    );
  } finally {
    await h.close();
  }
  await assert.rejects(fetch(h.server.metricsUrl), "closed with the Server");
});

void test("default: /metrics on the client port", async () => {
  const h = await ServerHarness.start();
  try {
    assert.equal(h.server.metricsUrl, `${h.url}/metrics`);
    assert.equal((await fetch(h.server.metricsUrl)).status, 200);
  } finally {
    await h.close();
  }
});

void test("--metrics-port / --metrics-host and their env", async () => {
  const base = ["--no-auth"];
  assert.equal((await configFromArgs(base, {})).metricsListen, undefined);
  assert.deepEqual((await configFromArgs([...base, "--metrics-port", "9464"], {})).metricsListen, {
    port: 9464,
  });
  assert.deepEqual(
    (await configFromArgs(base, { A2C_METRICS_PORT: "0", A2C_METRICS_HOST: "0.0.0.0" }))
      .metricsListen,
    { port: 0, host: "0.0.0.0" },
  );
  await assert.rejects(
    configFromArgs([...base, "--metrics-host", "0.0.0.0"], {}),
    /needs --metrics-port/,
  );
  await assert.rejects(configFromArgs([...base, "--metrics-port", "x"], {}), /--metrics-port/);
});
