// @both-transports
/**
 * The Computer's dispatch, seen from the relay's side. A bare socket.io server plays a relay that
 * forwards anything (buggy or hostile), so the Computer's own checks are what answers:
 * schema → 400, wrong `computer` → 404 and not executed (D15, protocol.md §4.3), no handler / throwing
 * handler / oversized answer → 500, unknown event → 404 (unknown-events.test.ts has the names),
 * cancel → service.cancel, attach/detach.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket as ServerSocket } from "socket.io";
import type { RunningComputer } from "../../computer/computer.ts";
import type { ComputerService } from "../../computer/contracts.ts";
import { bareRelay, type BareRelay } from "./support/bare-relay.ts";

let pcSocket: ServerSocket;
let pc: RunningComputer;
const executed: string[] = [];
const cancelled: string[] = [];
const lifecycle: string[] = [];
let notifyFn: ((e: "server:update_skills" | "server:update_tool_list") => void) | undefined;
let onCancel: ((id: string) => void) | undefined;

const service: ComputerService = {
  producers: [],
  handlers: {
    "client:get_tools": async (req) => {
      executed.push(req.req_id);
      return { tools: [], req_id: req.req_id };
    },
    "client:get_skills": async () => {
      throw new Error("boom /secret/path");
    },
    "client:tool_call": async (req) => ({
      content: [{ type: "text", text: "x".repeat(1_100_000) }],
      isError: false,
      req_id: req.req_id,
    }),
  },
  attach: (notify) => {
    lifecycle.push("attach");
    notifyFn = notify;
  },
  detach: () => lifecycle.push("detach"),
  cancel: (id) => {
    cancelled.push(id);
    onCancel?.(id);
  },
  close: async () => {
    lifecycle.push("close");
  },
};

let bare: BareRelay;
before(async () => {
  bare = await bareRelay({ services: [service] });
  ({ relay: pcSocket, pc } = bare);
});

after(() => bare.close());

const base = (extra: Record<string, unknown> = {}) => ({
  agent: "agent-1",
  req_id: `r-${Math.random().toString(36).slice(2)}`,
  computer: "pc-1",
  ...extra,
});

const ask = (event: string, payload: unknown): Promise<unknown> =>
  pcSocket.timeout(5_000).emitWithAck(event, payload);

void test("a valid request reaches its handler", async () => {
  const req = base();
  assert.deepEqual(await ask("client:get_tools", req), { tools: [], req_id: req.req_id });
  assert.ok(executed.includes(req.req_id));
});

void test("schema failures are a flat 400 and are not executed", async () => {
  const before = executed.length;
  for (const bad of [null, "x", {}, { ...base(), req_id: 5 }, { ...base(), computer: "" }]) {
    assert.deepEqual(await ask("client:get_tools", bad), {
      code: 400,
      message: "Invalid request payload",
    });
  }
  assert.deepEqual(
    await ask("client:get_blob", { ...base(), blob_handle: "h", chunk_offset: 0.5 }),
    { code: 400, message: "Invalid request payload" },
  );
  assert.equal(executed.length, before);
});

void test("a request for another Computer is answered 404 and not executed", async () => {
  const before = executed.length;
  assert.deepEqual(await ask("client:get_tools", base({ computer: "pc-2" })), {
    code: 404,
    message: "Computer with name 'pc-2' not found",
    details: { computer_name: "pc-2" },
  });
  assert.equal(executed.length, before);
});

void test("throwing handler, missing handler, oversized answer: flat 500; unknown event 404", async () => {
  const thrown = (await ask("client:get_skills", base())) as Record<string, unknown>;
  assert.deepEqual(thrown, { code: 500, message: "Internal error" }, "no stack or path leaks");
  const missing = (await ask("client:get_skill", base({ name: "x" }))) as { code: number };
  assert.equal(missing.code, 500);
  const unknown = (await ask("client:frobnicate", base())) as { code: number };
  assert.equal(unknown.code, 404);
  const huge = (await ask(
    "client:tool_call",
    base({ tool_name: "t", params: {}, timeout: 5 }),
  )) as { code: number; message: string };
  assert.deepEqual(huge, { code: 500, message: "Answer too large for the Server's buffer" });
  assert.ok(pc.joined && pc.socket.connected, "the Computer survived all of it");
});

void test("get_blob with a forged handle is answered by the engine", async () => {
  assert.deepEqual(await ask("client:get_blob", { ...base(), blob_handle: "xyz" }), {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "invalid_handle" },
  });
});

void test("notify:tool_call_cancel reaches service.cancel; malformed ones are ignored", async () => {
  const seen = new Promise<string>((resolve) => (onCancel = resolve));
  pcSocket.emit("notify:tool_call_cancel", { agent: "agent-1" }); // malformed: no req_id
  pcSocket.emit("notify:tool_call_cancel", { agent: "agent-1", req_id: "call-7" });
  assert.equal(await seen, "call-7");
  assert.deepEqual(cancelled, ["call-7"]);
});

void test("attach after join; notify emits server:update_* with this Computer's name", async () => {
  assert.deepEqual(lifecycle, ["attach"]);
  const got = new Promise<unknown>((resolve) => pcSocket.once("server:update_skills", resolve));
  notifyFn!("server:update_skills");
  assert.deepEqual(await got, { computer: "pc-1" });
});

void test("close: leaves the office, detaches, closes every service", async () => {
  const left = new Promise<unknown>((resolve) =>
    pcSocket.once("server:leave_office", (req: unknown, ack?: (ok: boolean, r: null) => void) => {
      ack?.(true, null);
      resolve(req);
    }),
  );
  await pc.close();
  assert.deepEqual(await left, { office_id: "office-1" });
  assert.deepEqual(lifecycle, ["attach", "detach", "close"]);
  assert.equal(pc.joined, false);
});
