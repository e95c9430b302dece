// @both-transports
// Liveness a client cannot game (server/namespace.ts). engine.io alone re-arms its heartbeat on
// any pong, so a client that reads nothing but sends a pong every few seconds was never found
// dead. Now only the answer to the Server's own ping counts: an unsolicited pong closes the
// connection at once, counted as unsolicited_pong, and a client that stops answering is
// dropped by engine.io's own ping timeout. A compliant client is untouched.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { RawClient } from "../support/raw-client.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

const harnesses: ServerHarness[] = [];
const clients: RawClient[] = [];
after(async () => {
  for (const c of clients) c.close();
  await Promise.all(harnesses.map((h) => h.close()));
});

async function start(ping?: { pingIntervalMs: number; pingTimeoutMs: number }) {
  const h = await ServerHarness.start(ping ?? {});
  harnesses.push(h);
  return h;
}

async function joined(h: ServerHarness, name: string): Promise<RawClient> {
  const c = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
  clients.push(c);
  assert.deepEqual(await c.join("agent", name, name), [true, null]);
  return c;
}

async function metric(h: ServerHarness, re: RegExp): Promise<string | undefined> {
  return re.exec(await (await fetch(`${h.url}/metrics`)).text())?.[1];
}

void test("a compliant client answers ping after ping and stays connected", async () => {
  const h = await start({ pingIntervalMs: 100, pingTimeoutMs: 400 });
  const c = await joined(h, "compliant");
  for (let i = 0; i < 5; i++) await c.nextPing();
  assert.equal(c.connected, true);
  assert.deepEqual(await c.request("server:leave_office", { office_id: "compliant" }), [
    true,
    null,
  ]);
});

void test("a non-reading client sending unsolicited pongs is dropped at the first one", async () => {
  // engine.io's own heartbeat here: 25 s + 60 s. Without the rule those pongs would keep the
  // session open indefinitely; the test's guard (10 s) is far below that.
  const h = await start();
  const c = await joined(h, "pong-spammer");
  c.stopReading();
  const pongs = setInterval(() => c.sendRaw("3"), 100); // the attack scaled: 10 s → 100 ms
  try {
    const dropped = await Promise.race([c.closed.then(() => true), sleep(10_000, false)]);
    assert.equal(dropped, true, "dropped well within engine.io's own heartbeat bound");
  } finally {
    clearInterval(pongs);
  }
  assert.equal(await metric(h, /a2c_disconnects_total\{reason="unsolicited_pong"\} (\d+)/), "1");
  assert.equal(h.server.io.of("/smcp").sockets.size, 0);
});

void test("a client that stops reading and answering is dropped by the ping timeout", async () => {
  const h = await start({ pingIntervalMs: 100, pingTimeoutMs: 200 });
  const c = await joined(h, "silent");
  const [serverSide] = h.server.io.of("/smcp").sockets.values();
  const reason = new Promise((resolve) => serverSide!.once("disconnect", resolve));
  await c.nextPing();
  c.stopReading();
  // pingInterval + pingTimeout after the last answered ping. (The client, not reading, cannot
  // see its end: the Server's side is watched.)
  assert.equal(await reason, "ping timeout");
  assert.equal(
    await metric(h, /a2c_disconnects_total\{reason="unsolicited_pong"\} (\d+)/),
    undefined,
  );
});
