// HTTP: GET /healthz → 200 small JSON status; GET /metrics → Prometheus text with connections by
// role, offices, relayed requests by event and outcome, relay latency and bytes. Neither needs
// a2c_version. Other paths are a JSON 404.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, emitAck, httpGet, request } from "../support/server-harness.ts";

let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start();
});
after(() => h.close());

void test("/healthz answers a small JSON status", async () => {
  await h.agent("office-1", "agent-1");
  const res = await httpGet(`${h.url}/healthz`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = JSON.parse(res.text);
  assert.equal(body.status, "ok");
  assert.equal(body.protocol_version, "0.4.0");
  assert.equal(body.connections, 1);
  assert.equal(body.offices, 1);
});

void test("/metrics exposes the relay's counters in Prometheus text", async () => {
  const agent = await h.agent("office-2", "agent-2");
  const pc = await h.computer("office-2", "pc-2");
  pc.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack({ blob: "QUJD", req_id: req.req_id }),
  );
  await emitAck(agent, "client:get_blob", request("agent-2", "pc-2", { blob_handle: "h" }));
  await emitAck(agent, "client:get_tools", request("agent-2", "missing"));
  const res = await httpGet(`${h.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  const text = res.text;
  assert.match(text, /^a2c_connections\{role="agent"\} 2$/m);
  assert.match(text, /^a2c_connections\{role="computer"\} 1$/m);
  assert.match(text, /^a2c_offices 2$/m);
  assert.match(text, /^a2c_relay_requests_total\{event="client:get_blob",outcome="answered"\} 1$/m);
  assert.match(
    text,
    /^a2c_relay_requests_total\{event="client:get_tools",outcome="not_found"\} 1$/m,
  );
  assert.match(text, /^a2c_relay_latency_seconds_count\{event="client:get_blob"\} 1$/m);
  // "QUJD" is base64 of the 3 bytes "ABC".
  assert.match(
    text,
    /^a2c_relay_resource_bytes_total\{event="client:get_blob",carriage="base64"\} 3$/m,
  );
});

void test("unknown paths are a JSON 404; POST to /healthz too", async () => {
  const res = await httpGet(`${h.url}/nope`);
  assert.equal(res.status, 404);
  assert.deepEqual(JSON.parse(res.text), { code: 404, message: "Not found" });
  const post = await fetch(`${h.url}/healthz`, { method: "POST" });
  assert.equal(post.status, 404);
  await post.text();
});
