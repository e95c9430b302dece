// @both-transports
/**
 * Events the Computer does not handle, from a relay that forwards anything (a bare socket.io
 * server): with an ack, the flat 404 unknown_event at once, whatever the name (future events,
 * Server-side events, prototype names, 10,000 characters cut to 64); without an ack, nothing,
 * and the Computer keeps serving.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket as ServerSocket } from "socket.io";
import type { RunningComputer } from "../../computer/computer.ts";
import { unknownEvent } from "../../protocol/index.ts";
import { bareRelay, type BareRelay } from "./support/bare-relay.ts";

let bare: BareRelay;
let relay: ServerSocket;
let pc: RunningComputer;
before(async () => {
  bare = await bareRelay();
  ({ relay, pc } = bare);
});
after(() => bare.close());

const ask = (event: string, ...args: unknown[]): Promise<unknown> =>
  relay.timeout(5_000).emitWithAck(event, ...args);

void test("an unknown event with an ack: 404 unknown_event with its name", async () => {
  const names = [
    "client:get_config",
    "client:unknown",
    "server:join_office",
    "notify:enter_office",
    "foo",
    "__proto__",
    "toString",
    "constructor",
    "hasOwnProperty",
  ];
  for (const name of names) {
    assert.deepEqual(await ask(name, { agent: "a", req_id: "r", computer: "pc-1" }), {
      code: 404,
      message: "Event not supported",
      details: { reason: "unknown_event", event: name },
    });
  }
  const long = "client:" + "y".repeat(9_993);
  const answer = (await ask(long)) as { details: Record<string, unknown> };
  assert.deepEqual(answer, unknownEvent(long));
  assert.equal(answer.details.truncated, true);
  assert.equal((answer.details.event as string).length, 64);
});

void test("without an ack nothing happens, and the Computer keeps answering", async () => {
  for (const name of ["foo", "__proto__", "toString"]) relay.emit(name, { x: 1 });
  const forged = await ask("client:get_blob", {
    agent: "a",
    req_id: "r",
    computer: "pc-1",
    blob_handle: "forged",
  });
  assert.equal((forged as { code: number }).code, 4018);
  const text = await pc.metrics.registry.metrics();
  assert.match(text, /a2c_computer_unknown_events_total\{computer="pc-1"\} 10\b/);
});
