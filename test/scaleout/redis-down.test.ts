/**
 * Redis dies under a Server node: a join gets a clear refusal at once (never a hang, never a
 * crash), and the node reports itself unhealthy so a load balancer can take it out.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import { joinOffice, rawSocket, startNode, type TestNode } from "./cluster-harness.ts";

let redis: RedisInstance;
let node: TestNode;

before(async () => {
  redis = await startRedis();
  node = await startNode(redis.url, { prefix: "down" });
});

after(async () => {
  await node?.close();
  await redis?.stop();
});

void test("with Redis gone, join_office is refused with a reason; the node stays up", async () => {
  const before = await rawSocket(node.url);
  assert.deepEqual(await joinOffice(before, "computer", "pc", "o"), [true, null]);
  before.close();

  await redis.kill();
  const s = await rawSocket(node.url);
  const [ok, reason] = await joinOffice(s, "agent", "boss", "o");
  assert.equal(ok, false);
  assert.equal(reason, "registry_unavailable: Office registry unavailable, try joining again");
  s.close();

  // The process did not crash, and its health check says it cannot serve offices now.
  const health = await fetch(`${node.url}/healthz`);
  assert.equal(health.status, 500);
});
