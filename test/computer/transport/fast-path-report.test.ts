/**
 * The transport's fast-path report (computer/transport/index.ts): with the pinned libraries both
 * fast paths are available and on by default, `transport: "stock"` turns both off and
 * `{ off: [name] }` that one, a failing
 * probe makes one `unavailable: <reason>`; a running Computer reports them as the gauge
 * `a2c_transport_fast_path{name,state}`; the probes looked at the very classes the live
 * connection uses. And `stock` really is stock: no live object of the Computer's socket carries
 * an own member of ours (the Manager's `_packet`, the WebSocket transport's `write`, ws's sender
 * `dispatch`), while the fast Computer's do.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";
import { NodeWebSocket, Socket as EngineSocket } from "engine.io-client";
import { Manager } from "socket.io-client";
import type { RunningComputer } from "../../../computer/computer.ts";
import { decideFastPaths, FAST_PATHS } from "../../../computer/transport/index.ts";
import { TransportFixture } from "../support/transport-fixture.ts";

let f: TransportFixture;

before(async () => {
  f = await TransportFixture.start(randomBytes(1024));
});

after(async () => {
  await f?.close();
});

void test("fast: every path on; stock: every path off; a failing probe: unavailable", () => {
  assert.deepEqual(decideFastPaths("fast"), { mask_in_place: "on", batch_writes: "on" });
  assert.deepEqual(decideFastPaths("stock"), { mask_in_place: "off", batch_writes: "off" });
  const probe = (name: string): string | null => (name === "batch_writes" ? "gone" : null);
  assert.deepEqual(decideFastPaths("fast", probe), {
    mask_in_place: "on",
    batch_writes: "unavailable: gone",
  });
  assert.deepEqual(decideFastPaths("stock", probe), decideFastPaths("stock"));
  assert.deepEqual(decideFastPaths({ off: ["mask_in_place"] }), {
    mask_in_place: "off",
    batch_writes: "on",
  });
  assert.deepEqual(decideFastPaths({ off: ["batch_writes"] }, probe), {
    mask_in_place: "on",
    batch_writes: "off",
  });
});

/** The own members of ours on the live objects of `pc`'s WebSocket connection. */
function ownPatches(pc: RunningComputer): string[] {
  const transport = pc.socket.io.engine.transport as unknown as {
    ws: { _sender: object };
  };
  return [
    Object.hasOwn(pc.socket.io, "_packet") && "Manager._packet",
    Object.hasOwn(transport, "write") && "transport.write",
    Object.hasOwn(transport.ws._sender, "dispatch") && "sender.dispatch",
  ].filter((x): x is string => typeof x === "string");
}

void test("a running Computer exports each path as a gauge and patches only when fast", async () => {
  for (const mode of ["fast", "stock"] as const) {
    const name = `pc-${mode}`;
    const { pc } = await f.computer(name, { transport: mode });
    const state = mode === "fast" ? "on" : "off";
    assert.deepEqual(pc.fastPaths, { mask_in_place: state, batch_writes: state });
    const text = await pc.metrics.registry.metrics();
    for (const { name: path } of FAST_PATHS) {
      const line = `a2c_transport_fast_path{name="${path}",state="${state}",computer="${name}"} ${mode === "fast" ? 1 : 0}`;
      assert.ok(text.includes(line), `no line ${line} in\n${text}`);
    }
    assert.deepEqual(
      ownPatches(pc),
      mode === "fast" ? ["Manager._packet", "transport.write", "sender.dispatch"] : [],
    );
  }
});

void test("{ off: [name] }: that path off and unpatched, the other on", async () => {
  const { pc: noMask } = await f.computer("pc-no-mask", { transport: { off: ["mask_in_place"] } });
  assert.deepEqual(noMask.fastPaths, { mask_in_place: "off", batch_writes: "on" });
  assert.deepEqual(ownPatches(noMask), ["Manager._packet", "transport.write"]);
  const { pc: noBatch } = await f.computer("pc-no-batch", { transport: { off: ["batch_writes"] } });
  assert.deepEqual(noBatch.fastPaths, { mask_in_place: "on", batch_writes: "off" });
  assert.deepEqual(ownPatches(noBatch), ["sender.dispatch"]);
});

void test("the probes looked at the classes the live connection uses", async () => {
  const { pc } = await f.computer("pc-classes", { transport: "fast" });
  const fromHere = createRequire(import.meta.url);
  const ws = createRequire(fromHere.resolve("engine.io-client"))("ws") as {
    WebSocket: new () => object;
    Sender: { prototype: object };
  };
  const engine = pc.socket.io.engine;
  assert.ok(pc.socket.io instanceof Manager);
  assert.ok(engine instanceof EngineSocket);
  assert.ok(engine.transport instanceof NodeWebSocket);
  const live = (engine.transport as unknown as { ws: { _sender: object } }).ws;
  assert.ok(live instanceof ws.WebSocket);
  assert.equal(Object.getPrototypeOf(live._sender), ws.Sender.prototype);
});
