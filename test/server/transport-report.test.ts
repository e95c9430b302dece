// @both-transports
// The Server says which transport fast paths it runs: in the "server listening" log line, in
// /healthz (`fast_paths`) and as `a2c_transport_fast_path{name,state}`. With the installed
// (pinned) socket.io, engine.io, socket.io-parser and ws every probe passes, so a dependency
// update that changes what a fast path relies on fails here; `transport: "stock"` turns every one
// off, `{ off }` single ones; one whose probe fails reads `unavailable: <reason>` and is not applied.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { FAST_PATH_NAMES, type FastPathReport, type TransportOption } from "../../server/index.ts";
import {
  createServerTransport,
  decideFastPaths,
  registerFastPathGauge,
} from "../../server/transport/index.ts";
import { ServerHarness, TEST_TRANSPORT } from "../support/server-harness.ts";

const ALL_ON: FastPathReport = { raw_acks: "on", raw_uploads: "on", batch_writes: "on" };
const ALL_OFF: FastPathReport = { raw_acks: "off", raw_uploads: "off", batch_writes: "off" };

/** Starts a Server with `transport`, and returns its report as the log, /healthz and /metrics say. */
async function reported(transport: TransportOption) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const h = await ServerHarness.start({ transport, logger: pino({ level: "info" }, sink) });
  try {
    const listening = lines.find((l) => l.msg === "server listening");
    const health = (await fetch(`${h.url}/healthz`).then((r) => r.json())) as {
      fast_paths: unknown;
    };
    const metrics = await fetch(`${h.url}/metrics`).then((r) => r.text());
    const gauge = metrics.split("\n").filter((l) => l.startsWith("a2c_transport_fast_path{"));
    return {
      report: h.server.fastPaths,
      log: listening?.fastPaths,
      health: health.fast_paths,
      gauge,
    };
  } finally {
    await h.close();
  }
}

void test("by default every fast path is on, and the log, /healthz and /metrics say so", async () => {
  const r = await reported("fast");
  assert.deepEqual(r.report, ALL_ON);
  assert.deepEqual(r.log, ALL_ON);
  assert.deepEqual(r.health, ALL_ON);
  assert.deepEqual(
    r.gauge.sort(),
    FAST_PATH_NAMES.map((p) => `a2c_transport_fast_path{name="${p}",state="on"} 1`).sort(),
  );
});

void test('transport: "stock": every fast path off, gauge 0', async () => {
  const r = await reported("stock");
  assert.deepEqual(r.report, ALL_OFF);
  assert.deepEqual(r.health, ALL_OFF);
  assert.deepEqual(r.log, ALL_OFF);
  assert.ok(
    r.gauge.length === FAST_PATH_NAMES.length &&
      r.gauge.every((l) => l.endsWith(',state="off"} 0')),
  );
});

void test("the default without one fast path", async () => {
  const r = await reported({ off: ["batch_writes"] });
  const expected = { ...ALL_ON, batch_writes: "off" };
  assert.deepEqual(r.report, expected);
  assert.deepEqual(r.health, expected);
  assert.ok(r.gauge.includes('a2c_transport_fast_path{name="batch_writes",state="off"} 0'));
  assert.ok(r.gauge.includes('a2c_transport_fast_path{name="raw_acks",state="on"} 1'));
});

void test("a fast path whose probe fails is unavailable, with its reason, and not applied", async () => {
  const probe = (name: string): string | null => {
    if (name === "batch_writes") throw new Error("a changed class");
    return `no ${name} here`;
  };
  const transport = createServerTransport("fast", probe);
  assert.deepEqual(transport.report, {
    raw_acks: "unavailable: no raw_acks here",
    raw_uploads: "unavailable: no raw_uploads here",
    batch_writes: "unavailable: probe failed: a changed class",
  });
  assert.deepEqual(transport.ioOptions, {}, "socket.io's own parser");
  // Off by option is never probed.
  assert.deepEqual(decideFastPaths({ off: ["raw_acks"] }, probe).raw_acks, "off");
  const registry = new Registry();
  registerFastPathGauge(registry, transport.report);
  const text = await registry.metrics();
  assert.match(text, /^a2c_transport_fast_path\{name="raw_acks",state="unavailable"\} 0$/m);
});

void test("the test harness runs its Servers as A2C_TEST_SERVER_TRANSPORT says", async () => {
  const h = await ServerHarness.start();
  try {
    assert.deepEqual(h.server.fastPaths, TEST_TRANSPORT === "stock" ? ALL_OFF : ALL_ON);
  } finally {
    await h.close();
  }
});
