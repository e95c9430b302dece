// The Server says which transport fast paths it runs: in the "server listening" log line, in
// /healthz and as `a2c_transport_fast_path{name,state}`. With the installed (pinned) socket.io,
// engine.io, socket.io-parser and ws every fast path is available, so a dependency update that
// takes one away fails here; a fast path turned off by option reads `off`, one the libraries
// cannot carry reads `unavailable: <reason>` and is not applied.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { FAST_PATHS, type FastPathOptions, type TransportReport } from "../../server/index.ts";
import {
  createServerTransport,
  decideFastPaths,
  registerFastPathGauge,
} from "../../server/transport/index.ts";
import { ServerHarness, TEST_FAST_PATHS } from "../support/server-harness.ts";

const ALL_ON: TransportReport = {
  raw_acks: "on",
  ack_bytes: "on",
  preframe: "on",
  batch_writes: "on",
  fair_reads: "on",
};
const ALL_OFF: TransportReport = {
  raw_acks: "off",
  ack_bytes: "off",
  preframe: "off",
  batch_writes: "off",
  fair_reads: "off",
};

/** Starts a Server with `fastPaths`, and returns its report as the log, /healthz and /metrics say. */
async function reported(fastPaths: FastPathOptions) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const h = await ServerHarness.start({ fastPaths, logger: pino({ level: "info" }, sink) });
  try {
    const listening = lines.find((l) => l.msg === "server listening");
    const health = (await fetch(`${h.url}/healthz`).then((r) => r.json())) as {
      transport: unknown;
    };
    const metrics = await fetch(`${h.url}/metrics`).then((r) => r.text());
    const gauge = metrics.split("\n").filter((l) => l.startsWith("a2c_transport_fast_path{"));
    return {
      report: h.server.transport,
      log: listening?.transport,
      health: health.transport,
      gauge,
    };
  } finally {
    await h.close();
  }
}

void test("by default every fast path is on, and the log, /healthz and /metrics say so", async () => {
  const r = await reported("all");
  assert.deepEqual(r.report, ALL_ON);
  assert.deepEqual(r.log, ALL_ON);
  assert.deepEqual(r.health, ALL_ON);
  assert.deepEqual(
    r.gauge.sort(),
    FAST_PATHS.map((p) => `a2c_transport_fast_path{name="${p}",state="on"} 1`).sort(),
  );
});

void test('fastPaths: "none" is stock: every fast path off, gauge 0', async () => {
  const r = await reported("none");
  assert.deepEqual(r.report, ALL_OFF);
  assert.deepEqual(r.health, ALL_OFF);
  assert.deepEqual(r.log, ALL_OFF);
  assert.ok(
    r.gauge.length === FAST_PATHS.length && r.gauge.every((l) => l.endsWith(',state="off"} 0')),
  );
});

void test("one fast path off by option, the others on", async () => {
  const r = await reported({ ackBytes: false, fairReads: false });
  const expected = { ...ALL_ON, ack_bytes: "off", fair_reads: "off" };
  assert.deepEqual(r.report, expected);
  assert.deepEqual(r.health, expected);
  assert.ok(r.gauge.includes('a2c_transport_fast_path{name="ack_bytes",state="off"} 0'));
  assert.ok(r.gauge.includes('a2c_transport_fast_path{name="raw_acks",state="on"} 1'));
});

void test("a fast path the libraries cannot carry is unavailable, with its reason, and not applied", async () => {
  const probe = (path: string): string | null =>
    path === "raw_acks" || path === "fair_reads" ? `no ${path} here` : null;
  const transport = createServerTransport("all", probe);
  assert.deepEqual(transport.report, {
    ...ALL_ON,
    raw_acks: "unavailable: no raw_acks here",
    ack_bytes: "unavailable: needs raw_acks and preframe on",
    fair_reads: "unavailable: no fair_reads here",
  });
  assert.deepEqual(transport.ioOptions, {}, "socket.io's own parser");
  assert.deepEqual(transport.engineOptions, {}, "ws's default reads");
  // Off by option is never probed.
  assert.deepEqual(decideFastPaths({ rawAcks: false }, probe).raw_acks, "off");
  const registry = new Registry();
  registerFastPathGauge(registry, transport.report);
  const text = await registry.metrics();
  assert.match(text, /^a2c_transport_fast_path\{name="raw_acks",state="unavailable"\} 0$/m);
  assert.match(text, /^a2c_transport_fast_path\{name="preframe",state="on"\} 1$/m);
});

void test("ack_bytes needs raw_acks and preframe: without either it is unavailable", () => {
  const report = (o: FastPathOptions): string => decideFastPaths(o, () => null).ack_bytes;
  const needs = "unavailable: needs raw_acks and preframe on";
  assert.equal(report("all"), "on");
  assert.equal(report({ preframe: false }), needs);
  assert.equal(report({ rawAcks: false }), needs);
  assert.equal(report({ ackBytes: false, preframe: false }), "off");
  assert.equal(
    createServerTransport({ preframe: false }).ioOptions.parser?.Encoder.name,
    "AckTextEncoder",
  );
  assert.equal(createServerTransport("all").ioOptions.parser?.Encoder.name, "AckBytesEncoder");
});

void test("the test harness runs its Servers as A2C_TEST_SERVER_TRANSPORT says", async () => {
  const h = await ServerHarness.start();
  try {
    const expected: TransportReport = TEST_FAST_PATHS === "none" ? ALL_OFF : ALL_ON;
    assert.deepEqual(h.server.transport, expected);
  } finally {
    await h.close();
  }
});
