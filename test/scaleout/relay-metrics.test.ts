/**
 * Relay metrics across nodes: a request from an Agent on node A to a Computer on node B that
 * drops mid-request is answered `404 disconnected` (D11) AND counted under outcome
 * "disconnected" on node A, never as "answered" (the cross-node link used to report it as an
 * ordinary Computer answer).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AgentClient, ComputerNotFoundError } from "../../agent/index.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import { TOKEN, joinOffice, rawSocket, startNode, type TestNode } from "./cluster-harness.ts";

const OFFICE = "office-relay-metrics";
let redis: RedisInstance;
let a: TestNode;
let b: TestNode;
let agent: AgentClient;

before(async () => {
  redis = await startRedis();
  a = await startNode(redis.url, { prefix: "metrics" });
  b = await startNode(redis.url, { prefix: "metrics" });
  agent = new AgentClient({ url: a.url, token: TOKEN, name: "agent-a" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
});

after(async () => {
  await agent?.close();
  await a?.close();
  await b?.close();
  await redis?.stop();
});

async function outcomes(node: TestNode, event: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await node.server.metrics.relayed.get()).values) {
    if (v.labels.event === event) out[String(v.labels.outcome)] = v.value;
  }
  return out;
}

void test("a cross-node 404 disconnected is counted as outcome disconnected", async () => {
  const flaky = await rawSocket(b.url);
  assert.deepEqual(await joinOffice(flaky, "computer", "flaky-b", OFFICE), [true, null]);
  // The request reaches the Computer on B, which never answers and drops instead.
  flaky.on("client:get_tools", () => flaky.close());
  await assert.rejects(agent.getTools("flaky-b", { timeoutMs: 20_000 }), (err: unknown) => {
    assert.ok(err instanceof ComputerNotFoundError, String(err));
    assert.deepEqual(err.details, { computer_name: "flaky-b", reason: "disconnected" });
    return true;
  });
  assert.deepEqual(await outcomes(a, "client:get_tools"), { disconnected: 1 });
  assert.equal(a.server.inflight(), 0);
});
