/**
 * The fast-path report (computer/fast-paths.ts): with the pinned libraries every fast path is
 * available and on by default; `"none"` and per-path switches turn them off; a running Computer
 * reports them as the gauge `a2c_transport_fast_path{name,state}`; and the probes looked at the very
 * classes the live connection uses (socket.io-client's Manager, engine.io-client's Socket and
 * WebSocket transport, the ws that engine.io-client loads), not at other copies.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import {
  FAST_PATH_NAMES,
  FastPaths,
  resolveFastPaths,
  type FastPathReport,
} from "../../../computer/fast-paths.ts";
import { createComputerMetrics } from "../../../computer/metrics.ts";
import {
  EngineSocket,
  engineWs,
  Manager,
  NodeWebSocket,
} from "../../../computer/transport/client-stack.ts";
import { TransportFixture } from "../support/transport-fixture.ts";

let f: TransportFixture;

before(async () => {
  f = await TransportFixture.start(randomBytes(1024));
});

after(async () => {
  await f?.close();
});

const all = (state: "on" | "off"): FastPathReport =>
  Object.fromEntries(FAST_PATH_NAMES.map((n) => [n, state])) as FastPathReport;

void test("every fast path is available with the installed libraries and on by default", () => {
  assert.deepEqual(resolveFastPaths(undefined), all("on"));
  assert.deepEqual(resolveFastPaths("all"), all("on"));
  assert.deepEqual(resolveFastPaths("none"), all("off"));
  assert.deepEqual(resolveFastPaths({ maskInPlace: false, mcpReadBuffer: false }), {
    ...all("on"),
    mask_in_place: "off",
    mcp_read_buffer: "off",
  });
});

void test("a running Computer exports each path as a gauge", async () => {
  const { pc } = await f.computer("pc-gauge", { fastPaths: { batchWrites: false } });
  assert.deepEqual(pc.fastPaths, { ...all("on"), batch_writes: "off" });
  const text = await pc.metrics.registry.metrics();
  for (const name of FAST_PATH_NAMES) {
    const [state, value] = name === "batch_writes" ? ["off", 0] : ["on", 1];
    const line = `a2c_transport_fast_path{name="${name}",state="${state}",computer="pc-gauge"} ${value}`;
    assert.ok(text.includes(line), `no line ${line} in\n${text}`);
  }
});

void test("the probes looked at the classes the live connection uses", async () => {
  const { pc } = await f.computer("pc-classes", { fastPaths: "all" });
  const ws = engineWs();
  assert.ok(typeof ws !== "string", ws as string);
  const engine = pc.socket.io.engine;
  assert.ok(pc.socket.io instanceof Manager);
  assert.ok(engine instanceof EngineSocket);
  assert.ok(engine.transport instanceof NodeWebSocket);
  const live = (engine.transport as unknown as { ws: { _sender: object } }).ws;
  assert.ok(live instanceof (ws.WebSocket as unknown as new () => object));
  assert.equal(Object.getPrototypeOf(live._sender), ws.Sender.prototype);
});

void test("a path a live object cannot carry becomes unavailable once, in the report and the gauge", async () => {
  const metrics = createComputerMetrics("pc-unit");
  const warnings: unknown[] = [];
  const log = { info: () => undefined, warn: (o: unknown) => warnings.push(o) };
  const paths = new FastPaths(
    { batchWrites: false },
    { log: log as never, gauge: metrics.fastPaths },
  );
  paths.unavailable("lend_buffers", "no bufferedAmount");
  paths.unavailable("lend_buffers", "no bufferedAmount");
  paths.unavailable("batch_writes", "an off path stays off");
  assert.deepEqual(paths.report(), {
    ...all("on"),
    lend_buffers: "unavailable: no bufferedAmount",
    batch_writes: "off",
  });
  assert.equal(paths.on("lend_buffers"), false);
  assert.equal(warnings.length, 1);
  const text = await metrics.registry.metrics();
  const series = text.split("\n").filter((l) => l.startsWith("a2c_transport_fast_path{"));
  assert.deepEqual(series.sort(), [
    'a2c_transport_fast_path{name="batch_writes",state="off",computer="pc-unit"} 0',
    'a2c_transport_fast_path{name="lend_buffers",state="unavailable",computer="pc-unit"} 0',
    'a2c_transport_fast_path{name="mask_in_place",state="on",computer="pc-unit"} 1',
    'a2c_transport_fast_path{name="mcp_read_buffer",state="on",computer="pc-unit"} 1',
  ]);
});
