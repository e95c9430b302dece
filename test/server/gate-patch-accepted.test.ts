// protocol.md §1.3, D1: v0.x compatibility is MAJOR.MINOR equal, PATCH free: 0.4.7 connects to 0.4.0.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, joinOffice } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("a 0.4.7 client connects over polling and joins", async () => {
  const s = await h.connect({ version: "0.4.7" });
  assert.ok(s.connected);
  assert.deepEqual(await joinOffice(s, { role: "computer", name: "pc", office_id: "o" }), [
    true,
    null,
  ]);
});

void test("a 0.4.0 client connects WebSocket-only", async () => {
  const s = await h.connect({ version: "0.4.0", transports: ["websocket"] });
  assert.ok(s.connected);
  assert.equal(s.io.engine.transport.name, "websocket");
});

void test("a polling client upgrades to WebSocket through the gate", async () => {
  const s = await h.connect({ version: "0.4.2" });
  await new Promise<void>((resolve) => {
    if (s.io.engine.transport.name === "websocket") return resolve();
    s.io.engine.once("upgrade", () => resolve());
  });
  assert.equal(s.io.engine.transport.name, "websocket");
});
