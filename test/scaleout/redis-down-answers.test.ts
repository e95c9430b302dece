/**
 * Redis dies under a Server node while an Agent sits in an office: `server:list_room` gets a flat
 * ErrorPayload (500, reason in the message) and `server:leave_office` a `(false, reason)` at once,
 * never silence (protocol.md §4.1: every request with an ack gets an answer; the client must
 * not learn of a failure from its own timeout). A join is refused with a reason too.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Socket } from "socket.io-client";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import { joinOffice, rawSocket, startNode, type TestNode } from "./cluster-harness.ts";

const OFFICE = "office-down";
let redis: RedisInstance;
let node: TestNode;

before(async () => {
  redis = await startRedis();
  node = await startNode(redis.url, { prefix: "down-answers" });
});

after(async () => {
  await node?.close();
  await redis?.stop();
});

/** Emits with an ack; rejects if no answer comes within `ms` (the bug this file guards). */
function ask(s: Socket, event: string, payload: unknown, ms = 3_000): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${event}: no answer in ${ms} ms`)), ms);
    s.emit(event, payload, (...args: unknown[]) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

void test("with Redis gone, list_room and leave_office are answered with clear errors", async () => {
  const s = await rawSocket(node.url);
  assert.deepEqual(await joinOffice(s, "agent", "boss", OFFICE), [true, null]);
  await redis.kill();

  const [listed] = await ask(s, "server:list_room", {
    agent: "boss",
    req_id: "req-down-1",
    office_id: OFFICE,
  });
  assert.deepEqual(listed, { code: 500, message: "Office registry unavailable, try again" });

  const left = await ask(s, "server:leave_office", { office_id: OFFICE });
  assert.deepEqual(left, [false, "registry_unavailable: Office registry unavailable, try again"]);

  const other = await rawSocket(node.url);
  const joined = await ask(other, "server:join_office", {
    role: "computer",
    name: "pc",
    office_id: OFFICE,
  });
  assert.deepEqual(joined, [
    false,
    "registry_unavailable: Office registry unavailable, try joining again",
  ]);
  other.close();
  s.close();
});
