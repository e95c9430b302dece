// @both-transports
// Events the Server does not handle, sent by a raw client (none of socket.io-client's checks):
// with an ack, a flat 404 unknown_event at once, whatever the name (future events, other roles'
// events, prototype names, numbers, 10,000 characters, cut to 64 and said so); without an ack,
// nothing at all, and the connection goes on serving.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MAX_ECHOED_EVENT_CHARS, unknownEvent } from "../../protocol/index.ts";
import { RawClient } from "../support/raw-client.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

let h: ServerHarness;
let client: RawClient;
before(async () => {
  h = await ServerHarness.start();
  client = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
  assert.deepEqual(await client.join("agent", "office-1", "agent-1"), [true, null]);
});
after(async () => {
  client.close();
  await h.close();
});

const NAMES: unknown[] = [
  "foo",
  "client:unknown",
  "client:get_config",
  "server:unknown",
  "notify:enter_office",
  "notify:tool_call_cancel",
  "__proto__",
  "toString",
  "constructor",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "",
  42,
];

void test("an unknown event with an ack gets 404 unknown_event with its name", async () => {
  for (const name of NAMES) {
    const [answer, extra] = await client.request(name, { agent: "agent-1", req_id: "r" });
    assert.deepEqual(answer, {
      code: 404,
      message: "Event not supported",
      details: { reason: "unknown_event", event: String(name) },
    });
    assert.equal(extra, undefined, "one argument");
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

void test("a 10,000-character name is cut to 64 characters and says so", async () => {
  const name = "client:" + "x".repeat(9_993);
  const [answer] = await client.request(name);
  assert.deepEqual(answer, unknownEvent(name));
  assert.deepEqual(answer, {
    code: 404,
    message: "Event not supported",
    details: {
      reason: "unknown_event",
      event: name.slice(0, MAX_ECHOED_EVENT_CHARS),
      truncated: true,
      event_length: 10_000,
    },
  });
});

void test("without an ack nothing is answered and the connection keeps serving", async () => {
  for (const name of NAMES) client.notify(name, { x: 1 });
  // The next request on the same connection is answered: nothing came before it.
  const [room] = await client.request("server:list_room", {
    agent: "agent-1",
    req_id: "r",
    office_id: "office-1",
  });
  assert.ok(Array.isArray((room as { sessions?: unknown }).sessions), JSON.stringify(room));
  const text = await (await fetch(`${h.url}/metrics`)).text();
  // Only the acked ones are counted: NAMES plus the long one.
  assert.match(
    text,
    new RegExp(`a2c_refusals_total\\{reason="unknown_event"\\} ${NAMES.length + 1}\\b`),
  );
});
