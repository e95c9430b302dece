/**
 * Redis hangs (process stopped: the TCP connection stays up, nothing answers): office requests
 * are still answered within the registry's command bound (`commandTimeoutMs`), never left to the
 * client's timeout. `server:list_room` gets a flat 500, a join a refusal with a reason.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket } from "socket.io-client";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import { joinOffice, rawSocket, startNode, type TestNode } from "./cluster-harness.ts";

const OFFICE = "office-hung";
const BOUND_MS = 300;
let redis: RedisInstance;
let node: TestNode;
let stopped = false;

before(async () => {
  redis = await startRedis();
  node = await startNode(redis.url, { prefix: "hung", commandTimeoutMs: BOUND_MS });
});

after(async () => {
  // Resume Redis first: closing a node waits for its queued Redis commands.
  if (stopped) process.kill(redis.pid, "SIGCONT");
  await node?.close();
  await redis?.stop();
});

function ask(s: Socket, event: string, payload: unknown, ms = 5_000): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${event}: no answer in ${ms} ms`)), ms);
    s.emit(event, payload, (...args: unknown[]) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

void test("with Redis hung, list_room and join are answered within the command bound", async () => {
  const s = await rawSocket(node.url);
  const late = await rawSocket(node.url);
  assert.deepEqual(await joinOffice(s, "agent", "boss", OFFICE), [true, null]);
  process.kill(redis.pid, "SIGSTOP");
  stopped = true;

  const t0 = performance.now();
  const [listed] = await ask(s, "server:list_room", {
    agent: "boss",
    req_id: "req-hung-1",
    office_id: OFFICE,
  });
  assert.deepEqual(listed, { code: 500, message: "Office registry unavailable, try again" });
  const joined = await ask(late, "server:join_office", {
    role: "computer",
    name: "pc",
    office_id: OFFICE,
  });
  assert.deepEqual(joined, [
    false,
    "registry_unavailable: Office registry unavailable, try joining again",
  ]);
  // Two bounded commands, with slack for a loaded machine; far below the client's timeout.
  assert.ok(performance.now() - t0 < 4 * BOUND_MS + 2_000);
  late.close();
  s.close();
});
