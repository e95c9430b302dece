// One socket per namespace per session, and no guessing at speed (server/namespace.ts, D53):
// a repeated CONNECT on a session that has, or is opening, a socket on `/smcp` closes the session
// (one polling POST of thousands, or a burst of WebSocket frames), whatever the transport; wrong
// tokens close their session after three and make their address back off (a right token is still
// admitted); failures are logged once per episode; another office is answered meanwhile.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { pino } from "pino";
import { WebSocket } from "ws";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";
import { ServerHarness, TEST_TOKEN, emitAck, request } from "../support/server-harness.ts";

const harnesses: ServerHarness[] = [];
after(() => Promise.all(harnesses.map((h) => h.close())));

const query = `EIO=4&a2c_version=${PROTOCOL_VERSION}`;
const connectPacket = (token: string): string => `40${NAMESPACE},${JSON.stringify({ token })}`;

/** A Server whose WARN lines are collected, with an office whose Agent and Computer answer. */
async function start(options: { exemptLoopback?: boolean } = {}) {
  const warnings: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      warnings.push(...chunk.toString().trim().split("\n"));
      done();
    },
  });
  const h = await ServerHarness.start({ logger: pino({ level: "warn" }, sink), ...options });
  harnesses.push(h);
  const agent = await h.agent("office-2", "agent-2");
  const pc = await h.computer("office-2", "pc-2");
  pc.on("client:get_tools", (_req: unknown, ack: (a: unknown) => void) => ack({ tools: [] }));
  const otherOffice = async (): Promise<void> => {
    const [answer] = await emitAck(agent, "client:get_tools", request("agent-2", "pc-2"));
    assert.deepEqual(answer, { tools: [] });
  };
  const metric = async (name: string, label?: string): Promise<number> => {
    const text = await (await fetch(`${h.url}/metrics`)).text();
    const labels = label === undefined ? "" : `\\{[a-z]+="${label}"\\}`;
    const m = new RegExp(`^${name}${labels} (\\S+)$`, "m").exec(text);
    return Number(m?.[1] ?? 0);
  };
  return {
    h,
    warnings,
    otherOffice,
    metric,
    sockets: () => h.server.io.of(NAMESPACE).sockets.size,
  };
}

/** A raw WebSocket session; resolves once engine.io's open packet arrived. */
async function rawWebSocket(
  url: string,
  path: string,
): Promise<{ ws: WebSocket; texts: string[]; closed: Promise<void> }> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}${path}?${query}&transport=websocket`);
  const texts: string[] = [];
  ws.on("message", (d: Buffer) => texts.push(d.toString()));
  ws.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    ws.once("message", () => resolve());
    ws.once("error", reject);
  });
  return { ws, texts, closed };
}

/** The next text message that matches, or the connection's close (null). */
function nextText(
  s: { ws: WebSocket; texts: string[] },
  match: (t: string) => boolean,
): Promise<string | null> {
  const seen = s.texts.find(match);
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve) => {
    const onMessage = (d: Buffer): void => {
      const t = d.toString();
      if (!match(t)) return;
      s.ws.off("close", onClose);
      s.ws.off("message", onMessage);
      resolve(t);
    };
    const onClose = (): void => resolve(null);
    s.ws.on("message", onMessage);
    s.ws.once("close", onClose);
  });
}

void test("one polling POST of 10,000 CONNECTs: one socket at most, the session closed", async () => {
  const { h, otherOffice, metric, sockets } = await start();
  const before = sockets();
  const base = `${h.url}${h.server.path}?${query}&transport=polling`;
  const open = await (await fetch(base)).text();
  const sid = (JSON.parse(open.slice(1)) as { sid: string }).sid;
  const body = Array.from({ length: 10_000 }, () => connectPacket(TEST_TOKEN)).join("\x1e");
  const heap = process.memoryUsage().heapUsed;
  const post = await fetch(`${base}&sid=${sid}`, { method: "POST", body });
  assert.equal(post.status, 200);
  await otherOffice();
  assert.ok(sockets() - before <= 1, `${sockets() - before} sockets for one session`);
  assert.equal(await metric("a2c_disconnects_total", "repeated_connect"), 1);
  const poll = await fetch(`${base}&sid=${sid}`);
  assert.equal(poll.status, 400, "the session is gone");
  await poll.arrayBuffer();
  await otherOffice();
  assert.equal(sockets(), before);
  const grown = process.memoryUsage().heapUsed - heap;
  assert.ok(grown < 64 * 1024 * 1024, `heap grew ${grown} bytes`);
});

void test("a burst of CONNECT frames on one WebSocket: the session closes, one socket at most", async () => {
  const { h, otherOffice, metric, sockets } = await start();
  const before = sockets();
  const s = await rawWebSocket(h.url, h.server.path);
  for (let i = 0; i < 200; i++) s.ws.send(connectPacket(TEST_TOKEN));
  await s.closed;
  assert.ok(sockets() - before <= 1);
  assert.equal(await metric("a2c_disconnects_total", "repeated_connect"), 1);
  await otherOffice();
  assert.equal(sockets(), before);
});

void test("a client may leave a namespace and connect again on the same session", async () => {
  const { h, sockets } = await start();
  const before = sockets();
  const s = await rawWebSocket(h.url, h.server.path);
  for (let round = 0; round < 3; round++) {
    s.texts.length = 0;
    s.ws.send(connectPacket(TEST_TOKEN));
    assert.match((await nextText(s, (t) => t.startsWith("40"))) ?? "closed", /^40\/smcp,/);
    s.ws.send(`41${NAMESPACE},`);
    // Once the Server has let go of the socket (socket.io itself closes a session whose CONNECT
    // finds the namespace's socket still there).
    while (sockets() !== before) await new Promise((resolve) => setImmediate(resolve));
  }
  s.ws.close();
  await s.closed;
  while (sockets() !== before) await new Promise((resolve) => setImmediate(resolve));
});

void test("guessing tokens: three refusals close the session, the address backs off, one log line", async () => {
  const { h, warnings, otherOffice, metric } = await start({ exemptLoopback: false });
  const refusals: string[] = [];
  const perSession: number[] = [];
  // Wrong tokens as fast as the answers come: 3 a session, 1 once the address backs off.
  while (refusals.length < 13) {
    const s = await rawWebSocket(h.url, h.server.path);
    perSession.push(0);
    for (;;) {
      s.texts.length = 0;
      s.ws.send(connectPacket(`guess-${refusals.length}`));
      const answer = await nextText(s, (t) => t.startsWith("44"));
      if (answer === null) break;
      refusals.push(answer);
      perSession[perSession.length - 1]! += 1;
    }
    await s.closed;
  }
  // The tenth failure starts the back-off: the eleventh is its first refusal, and closes its session.
  assert.deepEqual(perSession, [3, 3, 3, 2, 1, 1]);
  assert.equal(await metric("a2c_disconnects_total", "refused_connects"), 6);
  assert.match(refusals[0]!, /"code":401/);
  assert.match(refusals[9]!, /"code":401/);
  const { data: answer } = JSON.parse(refusals[10]!.slice(`44${NAMESPACE},`.length)) as {
    data: { code: number; details: { limit: string; retry_after_ms: number } };
  };
  assert.equal(answer.code, 500);
  assert.equal(answer.details.limit, "auth_failures");
  assert.ok(answer.details.retry_after_ms > 0 && answer.details.retry_after_ms <= 60_000);
  // The right token is checked before the back-off, and admitted at once (D70).
  const s = await rawWebSocket(h.url, h.server.path);
  s.ws.send(connectPacket(TEST_TOKEN));
  assert.match((await nextText(s, (t) => t.startsWith("40"))) ?? "closed", /^40\/smcp,/);
  s.ws.close();
  await s.closed;
  assert.equal(await metric("a2c_auth_failures_total"), 13, "every wrong token was checked");
  assert.equal(await metric("a2c_limit_refusals_total", "auth_failures"), 3);
  await otherOffice();
  const authLines = warnings.filter((l) => l.includes("unauthorized"));
  assert.equal(authLines.length, 1, authLines.join("\n"));
});
