// protocol.md §5.5 (about 100 concurrent connections per address): Engine.IO sessions per remote
// address are capped before engine.io. Half-open sessions (a handshake never polled again) hold a
// slot until they close; over the cap both transports get HTTP 429 with the same flat JSON body;
// requests of an existing session, other addresses and freed slots pass.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { after, before, test } from "node:test";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import { ServerHarness } from "../support/server-harness.ts";

const MAX = 3;
let h: ServerHarness;
before(async () => {
  // Every peer of this test is on loopback, which is exempt unless told otherwise.
  h = await ServerHarness.start({ maxConnectionsPerIp: MAX, exemptLoopback: false });
});
after(() => h.close());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One raw request from `localAddress` (any 127/8 address reaches the loopback listener). */
function raw(
  query: string,
  opts: { localAddress?: string; method?: string; body?: string; upgrade?: boolean } = {},
): Promise<Answer> {
  const transport = opts.upgrade ? "websocket" : "polling";
  const url = `${h.url}${h.server.path}?EIO=4&transport=${transport}&a2c_version=${PROTOCOL_VERSION}${query}`;
  const headers: Record<string, string> = opts.upgrade
    ? {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
      }
    : {};
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: opts.method ?? "GET",
      agent: false,
      headers,
      ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, headers: res.headers, body: "" });
    });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** A polling handshake; returns the new session id. */
async function handshake(localAddress?: string): Promise<string> {
  const a = await raw("", localAddress ? { localAddress } : {});
  assert.equal(a.status, 200, a.body);
  return (JSON.parse(a.body.slice(1)) as { sid: string }).sid;
}

async function metric(name: string): Promise<string> {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .join("\n");
}

void test("half-open sessions count; the next handshake and upgrade get 429 with one body", async () => {
  const sids: string[] = [];
  for (let i = 0; i < MAX; i++) sids.push(await handshake());

  const polling = await raw("");
  assert.equal(polling.status, 429);
  assert.equal(polling.headers["content-type"], "application/json");
  assert.equal(polling.headers["retry-after"], "5");
  assert.deepEqual(JSON.parse(polling.body), {
    code: 500,
    message: `Too many connections from this address (limit ${MAX})`,
    details: { reason: "busy", limit: "connections_per_ip", max: MAX },
  });
  const upgrade = await raw("", { upgrade: true });
  assert.equal(upgrade.status, 429);
  assert.equal(upgrade.body, polling.body, "same bytes on both transports");
  assert.equal(h.server.io.engine.clientsCount, MAX, "no session was opened for a refusal");

  // The sessions already open keep working: a request with their sid is not a new connection
  // (a POSTed noop, "6": a GET would be a long poll held until the next ping, and a pong with
  // no ping out closes the session, server/namespace.ts).
  const noop = await raw(`&sid=${sids[0]}`, { method: "POST", body: "6" });
  assert.equal(noop.status, 200, noop.body);

  // Another address has its own budget.
  await handshake("127.0.0.2");

  assert.match(
    await metric("a2c_limit_refusals_total"),
    /a2c_limit_refusals_total\{limit="connections_per_ip"\} 2\b/,
  );
  assert.match(await metric("a2c_sessions_per_ip_max"), /a2c_sessions_per_ip_max 3\b/);

  // Closing a session (Engine.IO close packet "1") frees its slot at once.
  const closed = await raw(`&sid=${sids[1]}`, { method: "POST", body: "1" });
  assert.equal(closed.status, 200);
  sids[1] = await handshake();
  assert.equal((await raw("")).status, 429, "and the cap holds again");
  for (const sid of sids) await raw(`&sid=${sid}`, { method: "POST", body: "1" });
});
