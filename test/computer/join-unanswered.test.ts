/**
 * A `server:join_office` that gets no answer in time is not a refusal: a starved or restarting
 * Server may simply be late. The Computer asks again instead of giving up for good (it used to
 * stop with `join_refused: no answer` when its very first join timed out), while an explicit
 * refusal at start stays final (test/computer/connect.test.ts).
 * A scripted Server (plain socket.io) leaves the first join unanswered and accepts the second.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Server } from "socket.io";
import { startComputer } from "../../computer/computer.ts";
import { NAMESPACE } from "../../protocol/index.ts";
import { testTransport } from "./support/harness-computer.ts";

void test("a join left unanswered is sent again and the Computer starts", async () => {
  const dir = mkdtempSync(join(tmpdir(), "a2c-join-unanswered-"));
  const http = createServer();
  const io = new Server(http);
  const joins: unknown[] = [];
  io.of(NAMESPACE).on("connection", (socket) => {
    socket.on("server:join_office", (req: unknown, ack: (ok: boolean, r: null) => void) => {
      joins.push(req);
      if (joins.length > 1) ack(true, null); // the first one is never answered
    });
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  try {
    const computer = await startComputer({
      server: url,
      office: "office-1",
      name: "pc-late",
      token: "t",
      stateDir: join(dir, "state"),
      workers: 0,
      services: [],
      joinTimeoutMs: 200,
      startTimeoutMs: 20_000,
      transport: testTransport(),
    });
    try {
      assert.equal(computer.joined, true);
      assert.equal(joins.length, 2);
      assert.deepEqual(joins[1], joins[0]);
      assert.deepEqual(joins[0], { role: "computer", name: "pc-late", office_id: "office-1" });
    } finally {
      await computer.close();
    }
  } finally {
    await new Promise<void>((r) => void io.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  }
});
