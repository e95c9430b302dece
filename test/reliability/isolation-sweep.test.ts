/**
 * Isolation: an Agent of office B sweeps every event against every office, Computer
 * name and handle it can guess (including a real handle minted in office A, and office A's
 * Agent name). A real victim Computer in office A counts what reaches it: nothing. Office A's
 * Agent hears nothing. Answers for names that exist elsewhere are byte-identical to answers for
 * names that exist nowhere (D9), and a stolen handle is just `invalid_handle` on B's own Computer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { CLIENT_EVENTS, Events } from "../../protocol/index.ts";
import {
  ask,
  hygieneViolations,
  REL_OFFICE,
  seenErrors,
  startRelStack,
  watchProcess,
  writeSkill,
  type RelStack,
} from "../support/reliability-stack.ts";
import { barrier, record, TEST_TOKEN, type Socket } from "../support/server-harness.ts";

let stack: RelStack;
let agentA: Socket;
let agentB: Socket;
let pcB: RunningComputer;
let stolen: string;
const victimSaw: string[] = [];
const watch = watchProcess();

before(async () => {
  stack = await startRelStack({ skills: { alpha: { "data.bin": Buffer.alloc(50_000, 1) } } });
  agentA = await stack.harness.agent(REL_OFFICE, "agent-a");
  const ret = (await ask(agentA, Events.GetSkill, {
    agent: "agent-a",
    req_id: "mint-1",
    computer: "pc",
    name: "alpha",
    rel_path: "data.bin",
  })) as { blob_handle?: string };
  assert.ok(ret.blob_handle);
  stolen = ret.blob_handle;
  await writeSkill(join(stack.dir, "home-b"), "alpha", { "data.bin": Buffer.alloc(50_000, 2) });
  pcB = await startComputer({
    server: stack.harness.url,
    office: "office-b",
    name: "pc-b",
    token: TEST_TOKEN,
    skills: join(stack.dir, "home-b"),
    stateDir: join(stack.dir, "state-b"),
    workers: 0,
    startTimeoutMs: 30_000,
  });
  agentB = await stack.harness.agent("office-b", "agent-b");
  stack.computer.socket.onAny((event: string) => victimSaw.push(event));
});
after(async () => {
  watch.stop();
  await pcB?.close();
  await stack?.close();
});

const GUESSES = ["pc", "agent-a", "PC", "pc ", "rel-office", "pc-b\u0000", "nobody-here"];
const MISSING = "nobody-here";

function payload(event: string, computer: string, n: number): Record<string, unknown> {
  const call = { agent: "agent-b", req_id: `sweep-${n}`, computer };
  switch (event) {
    case Events.GetSkill:
      return { ...call, name: "alpha", rel_path: "data.bin" };
    case Events.GetBlob:
      return { ...call, blob_handle: stolen, chunk_offset: 0 };
    case Events.ToolCall:
      return { ...call, tool_name: "t", params: {}, timeout: 5 };
    default:
      return call;
  }
}

void test("office B's Agent reaches nothing of office A and learns nothing", async () => {
  const heardA = record(agentA);
  const victimBefore = victimSaw.length;
  let n = 0;
  for (const event of CLIENT_EVENTS) {
    const answers = new Map<string, string>();
    for (const name of GUESSES) {
      for (const spoof of ["agent-b", "agent-a"]) {
        const answer = await ask(agentB, event, { ...payload(event, name, ++n), agent: spoof });
        // Normalize the echoed name: the rest must be byte-identical to a missing name's.
        const text = JSON.stringify(answer).split(JSON.stringify(name).slice(1, -1)).join("<N>");
        answers.set(`${name}|${spoof}`, text);
      }
    }
    for (const [key, text] of answers) {
      const spoof = key.split("|")[1]!;
      assert.equal(text, answers.get(`${MISSING}|${spoof}`), `${event} for ${key}`);
    }
  }
  // server:* aimed at office A.
  const office = { office_id: REL_OFFICE };
  const listed = await ask(agentB, Events.ListRoom, { agent: "agent-b", req_id: "l1", ...office });
  assert.equal((listed as { code?: number }).code !== undefined, true, "list_room of A refused");
  for (const ev of [
    Events.UpdateSkills,
    Events.UpdateToolList,
    Events.UpdateConfig,
    Events.UpdateDesktop,
  ])
    agentB.emit(ev, { computer: "pc" });
  agentB.emit(Events.ToolCallCancel, { agent: "agent-a", req_id: "mint-1", computer: "pc" });
  agentB.emit(Events.LeaveOffice, office);
  await barrier(agentB);
  await barrier(agentA);
  await barrier(stack.computer.socket);
  assert.deepEqual(victimSaw.slice(victimBefore), [], "the victim Computer received nothing");
  assert.deepEqual(heardA, [], "office A's Agent heard nothing");

  // The stolen handle on B's own Computer: invalid_handle, like any forged handle.
  const onB = await ask(agentB, Events.GetBlob, { ...payload(Events.GetBlob, "pc-b", ++n) });
  assert.deepEqual(onB, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "invalid_handle" },
  });
  assert.deepEqual(watch.problems, []);
  assert.deepEqual(hygieneViolations(seenErrors, [TEST_TOKEN, stolen, stack.dir]), []);
});
