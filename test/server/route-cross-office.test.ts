// protocol.md §4.1, D9: a client:* naming a Computer of another office is never delivered to it, and
// the answer is byte-for-byte the one for a name that exists nowhere — an Agent in office A
// probing every name of office B with every event learns nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CLIENT_EVENTS, computerNotFound } from "../../protocol/index.ts";
import {
  ServerHarness,
  emitAck,
  record,
  request,
  type Recorded,
  type Socket,
} from "../support/server-harness.ts";

const NAMES_B = ["pc-b1", "pc-b2", "agent-b", "pc-a"];
const extra: Record<string, Record<string, unknown>> = {
  "client:get_tools": {},
  "client:get_skills": {},
  "client:get_skill": { name: "s" },
  "client:get_blob": { blob_handle: "h" },
  "client:tool_call": { tool_name: "t", params: {}, timeout: 5 },
};

let h: ServerHarness;
let agentA: Socket;
const seenB: Recorded[][] = [];
before(async () => {
  h = await ServerHarness.start();
  agentA = await h.agent("office-a", "agent-a");
  for (const [role, name] of [
    ["agent", "agent-b"],
    ["computer", "pc-b1"],
    ["computer", "pc-b2"],
    ["computer", "pc-a"], // same name as nothing in A: still B's
  ] as const) {
    const s =
      role === "agent" ? await h.agent("office-b", name) : await h.computer("office-b", name);
    seenB.push(record(s));
  }
});
after(() => h.close());

void test("every event to every name of office B answers exactly like a missing name", async () => {
  for (const event of CLIENT_EVENTS) {
    for (const name of [...NAMES_B, "no-such-computer"]) {
      const [answer] = await emitAck(agentA, event, request("agent-a", name, extra[event]));
      assert.deepEqual(answer, computerNotFound(name), `${event} → ${name}`);
    }
  }
});

void test("nothing reached office B", async () => {
  await h.barrierAll();
  for (const seen of seenB) {
    assert.deepEqual(
      seen.filter((e) => e.event.startsWith("client:")),
      [],
    );
  }
});
