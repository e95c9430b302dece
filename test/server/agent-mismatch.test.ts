// A request whose `agent` field is not the sender's own name is refused with the flat
// 403 agent_mismatch, on every client:* event and on server:list_room, and never reaches a
// Computer: an Agent named attackerA cannot ask anything as victimB.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CLIENT_EVENTS, agentMismatch, type ClientEvent } from "../../protocol/index.ts";
import {
  ServerHarness,
  barrier,
  emitAck,
  request,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let attacker: Socket;
let pc: Socket;
const reached: string[] = [];

/** A payload of `event` that passes its schema, sent under `agent`. */
function valid(event: ClientEvent, agent: string): Record<string, unknown> {
  const fields: Record<ClientEvent, Record<string, unknown>> = {
    "client:get_tools": {},
    "client:tool_call": { tool_name: "t", params: {}, timeout: 5 },
    "client:get_skills": {},
    "client:get_skill": { name: "demo" },
    "client:get_blob": { blob_handle: "h", chunk_offset: 0, max_chunk_bytes: 1024 },
    "client:put_blob": {
      chunk_offset: 0,
      eof: true,
      total_size: 1,
      sha256: "0".repeat(64),
      blob: "AA==",
    },
  };
  return request(agent, "pc-1", fields[event]);
}

before(async () => {
  h = await ServerHarness.start();
  attacker = await h.agent("office-1", "attackerA");
  pc = await h.computer("office-1", "pc-1");
  // The victim is a real Agent elsewhere; its name must not open anything to the attacker.
  await h.agent("office-2", "victimB");
  for (const event of CLIENT_EVENTS) {
    pc.on(event, (req: { req_id: string }, ack: (a: unknown) => void) => {
      reached.push(`${event} ${req.req_id}`);
      ack({ ok: true, req_id: req.req_id });
    });
  }
});
after(() => h.close());

void test("every client:* event under another agent's name: 403 agent_mismatch, not routed", async () => {
  for (const event of CLIENT_EVENTS) {
    for (const claimed of ["victimB", "attackera", "attackerA ", ""]) {
      const payload = valid(event, claimed);
      const [answer] = await emitAck(attacker, event, payload);
      // An empty name fails the schema first (400); every well-formed other name is a 403.
      if (claimed === "") assert.equal((answer as { code: number }).code, 400, event);
      else assert.deepEqual(answer, agentMismatch(), `${event} as ${JSON.stringify(claimed)}`);
    }
  }
  await barrier(pc);
  assert.deepEqual(reached, [], "no spoofed request reached the Computer");

  // Under its own name every one of them is routed.
  for (const event of CLIENT_EVENTS) {
    const [answer] = await emitAck(attacker, event, valid(event, "attackerA"));
    assert.equal((answer as { ok?: boolean }).ok, true, event);
  }
  assert.equal(reached.length, CLIENT_EVENTS.length);
  assert.equal(h.server.inflight(), 0);
});

void test("server:list_room under another agent's name: 403 agent_mismatch", async () => {
  const spoofed = { agent: "victimB", req_id: "r1", office_id: "office-1" };
  assert.deepEqual((await emitAck(attacker, "server:list_room", spoofed))[0], agentMismatch());
  const own = { agent: "attackerA", req_id: "r2", office_id: "office-1" };
  const [answer] = await emitAck(attacker, "server:list_room", own);
  assert.equal((answer as { sessions: unknown[] }).sessions.length, 2);
});

void test("each refusal is counted under its reason", async () => {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  // Every client:* event x 3 spoofed names + one list_room.
  const expected = CLIENT_EVENTS.length * 3 + 1;
  assert.match(text, new RegExp(`a2c_refusals_total\\{reason="agent_mismatch"\\} ${expected}\\b`));
  assert.match(
    text,
    /a2c_relay_requests_total\{event="client:put_blob",outcome="agent_mismatch"\} 3\b/,
  );
  assert.match(
    text,
    /a2c_relay_requests_total\{event="client:get_blob",outcome="agent_mismatch"\} 3\b/,
  );
});
