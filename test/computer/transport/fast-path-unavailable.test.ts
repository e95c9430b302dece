/**
 * A fast path whose library no longer behaves as it relies on is reported unavailable and left
 * off, and the Computer serves on the stock behaviour: here engine.io-client's WebSocket
 * transport is made to send a write's packets on a later turn (as if an upgrade had made `write`
 * asynchronous, so a cork around it would cover nothing) before the Computer starts. The report,
 * the gauge and /healthz say `unavailable: <reason>`, nothing of the socket is patched, and
 * binary chunks still arrive intact.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { NodeWebSocket } from "engine.io-client";
import { pino } from "pino";
import { startComputerHttp } from "../../../computer/http.ts";
import { TransportFixture } from "../support/transport-fixture.ts";

const CHUNK = 16 * 1024;
let f: TransportFixture;
let restore: () => void = () => undefined;

before(async () => {
  // `write` is the WebSocket transport's base class's.
  let owner = NodeWebSocket.prototype as object;
  while (!Object.hasOwn(owner, "write")) owner = Object.getPrototypeOf(owner) as object;
  const saved = Object.getOwnPropertyDescriptor(owner, "write")!;
  const write = saved.value as (this: { writable: boolean }, packets: unknown[]) => void;
  Object.defineProperty(owner, "write", {
    ...saved,
    // Not writable from now on, as the real write says, so the engine queues what comes next;
    // a copy, as the engine may hand over its own write buffer and keep filling it.
    value: function (this: { writable: boolean }, packets: unknown[]): void {
      this.writable = false;
      const now = [...packets];
      setImmediate(() => write.call(this, now));
    },
  });
  restore = () => Object.defineProperty(owner, "write", saved);
  f = await TransportFixture.start(randomBytes(4 * CHUNK));
});

after(async () => {
  await f?.close();
  restore();
});

void test("batch_writes unavailable: reported so, nothing patched, chunks intact", async () => {
  const { pc, file } = await f.computer("pc-1", { transport: "fast" });
  const reason =
    "unavailable: the WebSocket transport's write ran cork,uncork, not both sends inside one cork";
  assert.equal(pc.fastPaths["batch_writes"], reason);
  assert.ok(!Object.hasOwn(pc.socket.io, "_packet"), "the Manager was patched");
  const metrics = await pc.metrics.registry.metrics();
  assert.ok(
    metrics.includes(
      'a2c_transport_fast_path{name="batch_writes",state="unavailable",computer="pc-1"} 0',
    ),
  );

  const http = await startComputerHttp({
    options: { port: 0 },
    computer: () => pc,
    name: "pc-1",
    office: "office-1",
    log: pino({ level: "silent" }),
  });
  try {
    const body = (await (await fetch(`${http.url}/healthz`)).json()) as {
      fast_paths: Record<string, string>;
    };
    assert.equal(body.fast_paths["batch_writes"], reason);
  } finally {
    await http.close();
  }

  for (let offset = 0; offset < f.fileContent.length; offset += CHUNK) {
    const got = await f.pull("pc-1", file, offset, CHUNK);
    assert.ok(got.equals(f.fileContent.subarray(offset, offset + CHUNK)), `chunk ${offset}`);
  }
});
