/**
 * Events the Computer does not handle, from a relay that forwards anything (a bare socket.io
 * server): with an ack, the flat 404 unknown_event at once, whatever the name (future events,
 * Server-side events, prototype names, 10,000 characters cut to 64); without an ack, nothing,
 * and the Computer keeps serving.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Server, type Socket as ServerSocket } from "socket.io";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { unknownEvent } from "../../protocol/index.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-unknown-"));
const http = createServer();
const io = new Server(http);
let relay: ServerSocket;
let pc: RunningComputer;

before(async () => {
  const joined = new Promise<ServerSocket>((resolve) => {
    io.of("/smcp").on("connection", (socket) => {
      socket.on("server:join_office", (_req: unknown, ack: (ok: boolean, r: null) => void) => {
        ack(true, null);
        resolve(socket);
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  pc = await startComputer({
    server: `http://127.0.0.1:${port}`,
    office: "office-1",
    name: "pc-1",
    stateDir: join(dir, "state"),
    workers: 0,
    services: [],
  });
  relay = await joined;
});
after(async () => {
  await pc.close();
  await io.close();
  rmSync(dir, { recursive: true, force: true });
});

const ask = (event: string, ...args: unknown[]): Promise<unknown> =>
  relay.timeout(5_000).emitWithAck(event, ...args);

void test("an unknown event with an ack: 404 unknown_event with its name", async () => {
  const names = [
    "client:put_blob",
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
