// @both-transports
// Bad input: every client:* and server:* event sent with no payload, null, a string, a number,
// an array, a Buffer, wrong field types, huge strings, extra arguments — answered where an ack was
// asked (400 / (false, reason) / empty ack), never delivered, never a crash or unhandled rejection.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CLIENT_EVENTS, badRequest } from "../../protocol/index.ts";
import {
  ServerHarness,
  emitAck,
  record,
  request,
  type Recorded,
  type Socket,
} from "../support/server-harness.ts";

const unhandled: unknown[] = [];
process.on("unhandledRejection", (reason) => unhandled.push(reason));

const HUGE = "x".repeat(900_000);
/** Six of these stay under maxHttpBufferSize (a bigger message would drop the socket). */
const LONG = "y".repeat(100_000);
const WRONG_TYPES = {
  agent: 1,
  req_id: {},
  computer: ["pc-1"],
  role: "admin",
  name: "",
  office_id: 5,
  blob_handle: 7,
  chunk_offset: "0",
  timeout: 1.5,
};
/** Argument lists (before the ack) that no event accepts. */
const BAD_ARGS: [string, unknown[]][] = [
  ["no payload", []],
  ["null", [null]],
  ["a string", ["hello"]],
  ["a number", [42]],
  ["a boolean", [true]],
  ["an array", [[1, 2, 3]]],
  ["a Buffer", [Buffer.from("binary")]],
  ["wrong field types", [WRONG_TYPES]],
  ["a huge string", [HUGE]],
  [
    "huge identifiers",
    [{ agent: LONG, req_id: LONG, computer: LONG, role: "agent", name: LONG, office_id: LONG }],
  ],
  [
    "an extra argument",
    [
      request("agent-1", "pc-1", {
        blob_handle: "h",
        name: "s",
        tool_name: "t",
        params: {},
        timeout: 1,
        role: "agent",
        office_id: "office-1",
        computer: "pc-1",
      }),
      "extra",
    ],
  ],
];

const SERVER_TUPLE_EVENTS = ["server:join_office", "server:leave_office"];
const SERVER_EMPTY_ACK_EVENTS = [
  "server:update_skills",
  "server:update_tool_list",
  "server:update_config",
  "server:update_desktop",
  "server:tool_call_cancel",
];

let h: ServerHarness;
let agent: Socket;
let pc: Socket;
let seenPc: Recorded[];
before(async () => {
  h = await ServerHarness.start();
  pc = await h.computer("office-1", "pc-1");
  agent = await h.agent("office-1", "agent-1");
  seenPc = record(pc);
});
after(() => h.close());

for (const [label, args] of BAD_ARGS) {
  void test(`${label}: every event answers and nothing is routed`, async () => {
    for (const event of CLIENT_EVENTS) {
      assert.deepEqual(await emitAck(agent, event, ...args), [badRequest()], `${event} (${label})`);
    }
    for (const event of SERVER_TUPLE_EVENTS) {
      assert.deepEqual(
        await emitAck(agent, event, ...args),
        [false, "invalid_payload: Invalid request payload"],
        `${event} (${label})`,
      );
    }
    assert.deepEqual(await emitAck(agent, "server:list_room", ...args), [badRequest()]);
    for (const event of SERVER_EMPTY_ACK_EVENTS) {
      assert.deepEqual(await emitAck(pc, event, ...args), [], `${event} (${label})`);
      assert.deepEqual(await emitAck(agent, event, ...args), [], `${event} (${label})`);
    }
    // The same without ack callbacks: silently ignored.
    for (const event of [...CLIENT_EVENTS, ...SERVER_TUPLE_EVENTS, ...SERVER_EMPTY_ACK_EVENTS]) {
      agent.emit(event, ...args);
    }
  });
}

void test("the office is intact and routing still works; nothing reached the Computer", async () => {
  await h.barrierAll();
  assert.deepEqual(
    seenPc.filter((e) => e.event.startsWith("client:") || e.event.startsWith("notify:")),
    [],
  );
  pc.on("client:get_tools", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack({ tools: [], req_id: req.req_id }),
  );
  const [answer] = await emitAck(agent, "client:get_tools", request("agent-1", "pc-1"));
  assert.deepEqual((answer as { tools: unknown[] }).tools, []);
  assert.deepEqual(unhandled, []);
  assert.equal((await fetch(`${h.url}/healthz`)).status, 200);
});
