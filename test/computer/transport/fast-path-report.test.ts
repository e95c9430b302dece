/**
 * The transport's fast-path report (computer/transport/index.ts): with the pinned libraries its
 * fast path is available and on by default, `transport: "stock"` and `{ off: [name] }` turn it
 * off, a failing probe makes it `unavailable: <reason>`; a running Computer reports it as the
 * gauge `a2c_transport_fast_path{name,state}`; the probe looked at the very classes the live
 * connection uses. And `stock` really is stock: no live object of the Computer's socket carries
 * an own member of ours (the Manager's `_packet`, the WebSocket transport's `write`), while the
 * fast Computer's do; ws's sender is never patched.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
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

void test("fast: every path on; stock or off: off; a failing probe: unavailable", () => {
  assert.deepEqual(decideFastPaths("fast"), { batch_writes: "on" });
  assert.deepEqual(decideFastPaths("stock"), { batch_writes: "off" });
  const probe = (name: string): string | null => (name === "batch_writes" ? "gone" : null);
  assert.deepEqual(decideFastPaths("fast", probe), { batch_writes: "unavailable: gone" });
  assert.deepEqual(decideFastPaths("stock", probe), decideFastPaths("stock"));
  assert.deepEqual(decideFastPaths({ off: ["batch_writes"] }, probe), { batch_writes: "off" });
  assert.deepEqual(decideFastPaths({ off: [] }), { batch_writes: "on" });
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
    assert.deepEqual(pc.fastPaths, { batch_writes: state });
    const text = await pc.metrics.registry.metrics();
    for (const { name: path } of FAST_PATHS) {
      const line = `a2c_transport_fast_path{name="${path}",state="${state}",computer="${name}"} ${mode === "fast" ? 1 : 0}`;
      assert.ok(text.includes(line), `no line ${line} in\n${text}`);
    }
    assert.deepEqual(ownPatches(pc), mode === "fast" ? ["Manager._packet", "transport.write"] : []);
  }
});

void test("{ off: [name] }: that path off and unpatched", async () => {
  const { pc: noBatch } = await f.computer("pc-no-batch", { transport: { off: ["batch_writes"] } });
  assert.deepEqual(noBatch.fastPaths, { batch_writes: "off" });
  assert.deepEqual(ownPatches(noBatch), []);
});

void test("the probe looked at the classes the live connection uses", async () => {
  const { pc } = await f.computer("pc-classes", { transport: "fast" });
  const engine = pc.socket.io.engine;
  assert.ok(pc.socket.io instanceof Manager);
  assert.ok(engine instanceof EngineSocket);
  assert.ok(engine.transport instanceof NodeWebSocket);
});
