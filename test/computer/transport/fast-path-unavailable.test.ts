/**
 * A fast path whose library no longer behaves as it relies on is reported unavailable and left
 * off, and the Computer serves on the stock behaviour: here ws's `Sender.frame` is made to copy
 * every buffer (as if an upgrade had changed it) before the Computer starts. The report, the
 * gauge and /healthz say `unavailable: <reason>`, the other paths stay on, and binary chunks
 * still arrive intact, each masked from a copy.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { startComputerHttp } from "../../../computer/http.ts";
import { createRequire } from "node:module";
import { TransportFixture } from "../support/transport-fixture.ts";

const CHUNK = 64 * 1024;
let f: TransportFixture;
let restore: () => void = () => undefined;

before(async () => {
  const fromHere = createRequire(import.meta.url);
  const ws = createRequire(fromHere.resolve("engine.io-client"))("ws") as {
    Sender: { frame: (data: Buffer, options: Record<string, unknown>) => Buffer[] };
  };
  const frame = ws.Sender.frame;
  ws.Sender.frame = (data, options) => frame.call(ws.Sender, data, { ...options, readOnly: true });
  restore = () => (ws.Sender.frame = frame);
  f = await TransportFixture.start(randomBytes(4 * CHUNK));
});

after(async () => {
  await f?.close();
  restore();
});

void test("mask_in_place unavailable: reported so, the rest on, chunks intact", async () => {
  const { pc, file } = await f.computer("pc-1", { transport: "fast" });
  const reason = "unavailable: ws no longer masks a writable buffer in place";
  assert.equal(pc.fastPaths["mask_in_place"], reason);
  assert.equal(pc.fastPaths["batch_writes"], "on");
  const metrics = await pc.metrics.registry.metrics();
  assert.ok(
    metrics.includes(
      'a2c_transport_fast_path{name="mask_in_place",state="unavailable",computer="pc-1"} 0',
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
    assert.equal(body.fast_paths["mask_in_place"], reason);
  } finally {
    await http.close();
  }

  for (let offset = 0; offset < f.fileContent.length; offset += CHUNK) {
    const got = await f.pull("pc-1", file, offset, CHUNK);
    assert.ok(got.equals(f.fileContent.subarray(offset, offset + CHUNK)), `chunk ${offset}`);
  }
});
