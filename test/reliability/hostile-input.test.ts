/**
 * Hostile input: 10,000 generated malformed payloads across every event the Server
 * accepts (from an Agent socket and from a Computer socket) and every `client:*` handler of the
 * Computer (sent straight at its socket, past the Server's checks). Every one that asked for an
 * ack gets a flat ErrorPayload or a valid answer; afterwards both still answer a valid request,
 * nothing was left unhandled, no prototype was polluted, the heap (after forced GC) did not grow
 * beyond a bound, and no error carried a path, token, key or stack.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { HANDLE_KEY_FILE } from "../../computer/blob/handle.ts";
import {
  CallToolResultSchema,
  CLIENT_EVENTS,
  ERROR_CODES,
  ErrorPayloadSchema,
  Events,
  GetBlobRetSchema,
  GetSkillRetSchema,
  GetSkillsRetSchema,
  GetToolsRetSchema,
  ListRoomRetSchema,
  NAMESPACE,
} from "../../protocol/index.ts";
import { hostileCases, type HostileCase } from "../support/reliability-hostile.ts";
import {
  ask,
  heapAfterGc,
  hygieneViolations,
  noteError,
  REL_OFFICE,
  seenErrors,
  startRelStack,
  watchProcess,
  type RelStack,
} from "../support/reliability-stack.ts";
import { barrier, TEST_TOKEN, type Socket } from "../support/server-harness.ts";

const SERVER_EVENTS = [
  Events.JoinOffice,
  Events.LeaveOffice,
  Events.ListRoom,
  Events.UpdateSkills,
  Events.UpdateToolList,
  Events.UpdateConfig,
  Events.UpdateDesktop,
  Events.ToolCallCancel,
];
const HEAP_BOUND = 40 * 1024 * 1024;

let stack: RelStack;
let agent: Socket; // sends client:* (stays joined)
let rogue: Socket; // an Agent sending server:* garbage (may leave / switch office)
let fakePc: Socket; // a Computer socket sending everything
let handle: string;
const watch = watchProcess();

before(async () => {
  stack = await startRelStack({
    skills: { alpha: { "notes.txt": "hello", "data.bin": Buffer.alloc(100_000, 7) } },
  });
  agent = await stack.harness.agent(REL_OFFICE, "agent-a");
  rogue = await stack.harness.agent("rogue-office", "agent-rogue"); // one Agent per office
  fakePc = await stack.harness.computer(REL_OFFICE, "fake-pc");
  for (const s of [agent, rogue, fakePc])
    s.on("disconnect", (why) => watch.problems.push(`a test socket was dropped: ${why}`));
  const ret = (await ask(agent, Events.GetSkill, base(Events.GetSkill))) as {
    blob_handle?: string;
  };
  assert.ok(ret.blob_handle, "data.bin is served by handle");
  handle = ret.blob_handle;
});
after(async () => {
  watch.stop();
  await stack?.close();
});

let n = 0;
/** A valid request of each event (what the mutations start from). */
function base(event: string): Record<string, unknown> {
  const call = { agent: "agent-a", req_id: `ok-${++n}`, computer: "pc" };
  switch (event) {
    case Events.GetSkill:
      return { ...call, name: "alpha", rel_path: "data.bin" };
    case Events.GetBlob:
      return { ...call, blob_handle: handle, chunk_offset: 0, max_chunk_bytes: 4096 };
    case Events.ToolCall:
      return { ...call, tool_name: "t", params: {}, timeout: 5 };
    case Events.JoinOffice:
      return { role: "agent", name: "agent-rogue", office_id: "rogue-office" };
    case Events.LeaveOffice:
      return { office_id: "rogue-office" };
    case Events.ListRoom:
      return { ...call, office_id: REL_OFFICE };
    case Events.ToolCallCancel:
      return call;
    default:
      return event.startsWith("server:update") ? { computer: "pc" } : call;
  }
}

/** What a successful answer of each request looks like (protocol/messages/). */
const ANSWERS: Record<string, { safeParse(v: unknown): { success: boolean } }> = {
  [Events.GetTools]: GetToolsRetSchema,
  [Events.ToolCall]: CallToolResultSchema,
  [Events.GetSkills]: GetSkillsRetSchema,
  [Events.GetSkill]: GetSkillRetSchema,
  [Events.GetBlob]: GetBlobRetSchema,
  [Events.ListRoom]: ListRoomRetSchema,
};

/**
 * An answer with a `code` is a flat error (protocol/errors.ts): a registered integer code, a
 * message, `details` a plain object if present, no `error` wrapper. Any other answer is what the
 * event's answer schema accepts. Nothing else passes.
 */
function assertAnswer(event: string, answer: unknown, what: string): void {
  const shown = `${event} ${what}: ${JSON.stringify(answer)?.slice(0, 300)}`;
  assert.ok(typeof answer === "object" && answer !== null && !Array.isArray(answer), shown);
  if ("code" in answer || "error" in answer) {
    const flat = ErrorPayloadSchema.safeParse(answer);
    assert.ok(flat.success && !("error" in answer), `not a flat error: ${shown}`);
    assert.ok(flat.data.code in ERROR_CODES, `unregistered code: ${shown}`);
    assert.notEqual(flat.data.message, "", `empty message: ${shown}`);
    return;
  }
  const schema = ANSWERS[event];
  assert.ok(schema, `${event} answers only errors here: ${shown}`);
  assert.ok(schema.safeParse(answer).success, `neither a flat error nor a valid answer: ${shown}`);
}

/** Sends the cases 32 at a time; acked ones must be answered (guard timeout = failure). */
async function fire(
  send: (c: HostileCase, ack?: (...a: unknown[]) => void) => void,
  event: string,
  cases: HostileCase[],
  check: (answer: unknown[], c: HostileCase) => void,
): Promise<void> {
  for (let i = 0; i < cases.length; i += 32) {
    await Promise.all(
      cases.slice(i, i + 32).map(
        (c) =>
          new Promise<void>((resolve, reject) => {
            if (!c.ack) {
              send(c);
              return resolve();
            }
            const timer = setTimeout(
              () => reject(new Error(`no ack: ${event} ${JSON.stringify(c).slice(0, 300)}`)),
              30_000,
            );
            send(c, (...answer) => {
              clearTimeout(timer);
              noteError(event, answer[0]);
              try {
                check(answer, c);
                resolve();
              } catch (err) {
                reject(err instanceof Error ? err : new Error(String(err)));
              }
            });
          }),
      ),
    );
  }
}

const checkAnswer =
  (event: string) =>
  (answer: unknown[], c: HostileCase): void => {
    if (event === Events.JoinOffice || event === Events.LeaveOffice) {
      assert.equal(typeof answer[0], "boolean", `${event} answers (ok, reason)`);
      if (answer[0] === false) assert.equal(typeof answer[1], "string", "a refusal has a reason");
      return;
    }
    if (event.startsWith("server:update") || event === Events.ToolCallCancel) return;
    assertAnswer(event, answer[0], JSON.stringify(c.args).slice(0, 200));
  };

/**
 * A Computer's answer as the Server would send it on: with raw acks the Server holds an answer as
 * the text it arrived in (server/transport/), which says what it is through `toJSON`.
 */
function asSent(answer: unknown): unknown {
  const raw = answer as { toJSON?: unknown } | null;
  if (raw === null || typeof raw !== "object" || raw instanceof Uint8Array) return answer;
  return typeof raw.toJSON === "function" ? (JSON.parse(JSON.stringify(raw)) as unknown) : answer;
}

function viaSocket(socket: Socket, event: string) {
  return (c: HostileCase, ack?: (...a: unknown[]) => void): void => {
    if (ack) socket.emit(event, ...c.args, ack);
    else socket.emit(event, ...c.args);
  };
}

void test("10,000 hostile payloads: flat answers, no crash, no leak, no pollution", async (t) => {
  const heapStart = heapAfterGc();
  let total = 0;
  let seed = 11_000;
  // 1. Agent → Server → Computer: every client:* event (6,000).
  for (const event of CLIENT_EVENTS) {
    const cases = hostileCases(base(event), 1_200, ++seed);
    const t0 = Date.now();
    await fire(viaSocket(agent, event), event, cases, checkAnswer(event));
    t.diagnostic(`${event}: ${Date.now() - t0} ms`);
    total += cases.length;
  }
  // 2. An Agent socket sending server:* garbage (2,000).
  for (const event of SERVER_EVENTS) {
    const cases = hostileCases(base(event), 250, ++seed);
    await fire(viaSocket(rogue, event), event, cases, checkAnswer(event));
    total += cases.length;
  }
  // 3. A Computer socket sending everything (1,040).
  for (const event of [...CLIENT_EVENTS, ...SERVER_EVENTS]) {
    const cases = hostileCases(base(event), 80, ++seed);
    await fire(viaSocket(fakePc, event), event, cases, checkAnswer(event));
    total += cases.length;
  }
  // 4. Straight at the Computer's handlers, past the Server's validation (1,000).
  const nsp = stack.harness.server.io.of(NAMESPACE);
  const pcSocket = nsp.sockets.get(stack.computer.socket.id ?? "");
  assert.ok(pcSocket, "the Computer's socket on the Server");
  for (const event of CLIENT_EVENTS) {
    const cases = hostileCases(base(event), 200, ++seed);
    const send = (c: HostileCase, ack?: (...a: unknown[]) => void): void => {
      if (ack)
        pcSocket
          .timeout(30_000)
          .emit(event as never, ...(c.args as never[]), (err: Error | null, ...a: unknown[]) =>
            ack(err ? err : asSent(a[0])),
          );
      else pcSocket.emit(event as never, ...(c.args as never[]));
    };
    await fire(send, event, cases, (answer, c) => {
      assert.ok(!(answer[0] instanceof Error), `${event}: the Computer answered`);
      checkAnswer(event)(answer, c);
    });
    total += cases.length;
  }
  assert.ok(total >= 10_000, `${total} payloads`);

  // Both processes still answer a valid request; the Computer is still joined.
  await barrier(agent);
  const skills = (await ask(agent, Events.GetSkills, base(Events.GetSkills))) as {
    skills?: unknown[];
  };
  assert.ok(Array.isArray(skills.skills), "the Computer still answers get_skills");
  const chunk = (await ask(agent, Events.GetBlob, base(Events.GetBlob))) as { blob?: string };
  assert.equal(typeof chunk.blob, "string", "and still serves a chunk");
  assert.ok(stack.computer.joined);

  // Nothing polluted, nothing unhandled, heap bounded.
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype clean");
  assert.deepEqual(watch.problems, []);
  const growth = heapAfterGc() - heapStart;
  assert.ok(growth < HEAP_BOUND, `heap grew ${(growth / 1e6).toFixed(1)} MB (bound 40 MB)`);

  // details hygiene over every error this suite produced.
  const key = await readFile(join(stack.stateDir, HANDLE_KEY_FILE));
  const secrets = [TEST_TOKEN, key.toString("hex"), key.toString("base64"), stack.dir];
  assert.ok(seenErrors.length > 5_000, `${seenErrors.length} errors seen`);
  assert.deepEqual(hygieneViolations(seenErrors, secrets), []);
  for (const text of [stack.serverLog(), stack.computerLog()])
    assert.ok(!text.includes(TEST_TOKEN), "no token in the logs");
});

void test("the answer check refuses what is neither a flat error nor a valid answer", () => {
  const chunk = {
    ...{ blob_handle: "h", mime_type: "text/plain", total_size: 2, sha256: "a".repeat(64) },
    ...{ chunk_offset: 0, eof: true, blob: "aGk=", req_id: "r" },
  };
  assertAnswer(Events.GetBlob, chunk, "a chunk");
  assertAnswer(Events.GetBlob, { code: 4018, message: "gone", details: { reason: "gone" } }, "");
  for (const bad of [
    { code: "4018", message: "a string code" },
    { code: 4018.5, message: "not an integer" },
    { code: 4999, message: "unregistered" },
    { code: 400, message: "" },
    { code: 400, message: "m", details: ["an", "array"] },
    { error: { code: 400, message: "wrapped" } },
    { ...chunk, total_size: -1 },
    { hello: "world" },
    null,
    "text",
  ]) {
    assert.throws(() => assertAnswer(Events.GetBlob, bad, "self-check"), assert.AssertionError);
  }
  assert.throws(() => assertAnswer(Events.ToolCallCancel, {}, "no answer schema"));
});
