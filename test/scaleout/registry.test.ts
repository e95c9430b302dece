/**
 * The Redis office registry on a real redis-server: the D5 rules under concurrent joins from
 * two "nodes", membership lookups, and the node life cycle (crash → reap, TTL expiry → reap,
 * reaped-while-alive → fence, clean stop).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createClient } from "redis";
import type { Member } from "../../server/offices.ts";
import { NodeHeartbeat } from "../../server/redis/heartbeat.ts";
import { RedisOfficeRegistry, type RedisMember } from "../../server/redis/registry.ts";
import { createLogger } from "../../server/log.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";

type Client = ReturnType<typeof createClient>;

let redis: RedisInstance;
const clients: Client[] = [];
let prefixSeq = 0;

async function client(): Promise<Client> {
  const c = createClient({ url: redis.url });
  c.on("error", () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

interface TestNode {
  registry: RedisOfficeRegistry;
  heartbeat: NodeHeartbeat;
  sub: Client;
  reaped: { node: string; members: RedisMember[] }[];
  fenced: number;
}

/** A "node": its own command and subscriber connections, registry and heartbeat. */
async function node(
  prefix: string,
  nodeId: string,
  opts: { ttlMs?: number; start?: boolean } = {},
): Promise<TestNode> {
  const cmd = await client();
  const sub = await client();
  const out: TestNode = { reaped: [], fenced: 0 } as unknown as TestNode;
  out.sub = sub;
  out.registry = new RedisOfficeRegistry({
    client: cmd,
    nodeId,
    prefix,
    onReaped: (n, members) => out.reaped.push({ node: n, members }),
  });
  out.heartbeat = new NodeHeartbeat({
    registry: out.registry,
    subscriber: sub,
    ttlMs: opts.ttlMs ?? 60_000,
    intervalMs: 50,
    logger: createLogger("silent"),
    onFenced: () => (out.fenced += 1),
  });
  if (opts.start !== false) await out.heartbeat.start();
  return out;
}

const nodesToStop: TestNode[] = [];
async function pair(ttlMs?: number): Promise<[TestNode, TestNode]> {
  const prefix = `t${(prefixSeq += 1)}`;
  const a = await node(prefix, "A", { ttlMs });
  const b = await node(prefix, "B", { ttlMs });
  nodesToStop.push(a, b);
  return [a, b];
}

function member(sid: string, role: "agent" | "computer", name: string, officeId: string): Member {
  return { sid, role, name, officeId, a2cVersion: "0.3.0" };
}

/** Waits (one PUBSUB round trip per check) until Redis has dropped a closed subscriber. */
async function subscribersGone(n: TestNode, channel: string): Promise<void> {
  const cmd = await client();
  for (let i = 0; i < 1000; i += 1) {
    const reply = await cmd.sendCommand<[string, number]>(["PUBSUB", "NUMSUB", channel]);
    if (Number(reply[1]) === 0) return;
  }
  throw new Error(`${channel} still has a subscriber (node ${n.registry.nodeId} watching)`);
}

before(async () => {
  redis = await startRedis();
});

after(async () => {
  for (const n of nodesToStop) await n.heartbeat.stop();
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await redis.stop();
});

void describe("D5 rules across nodes", () => {
  void test("of 40 concurrent Agents joining one office through two nodes, exactly one gets in", async () => {
    const [a, b] = await pair();
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).registry.join(member(`ag${i}`, "agent", `agent${i}`, "office-1")),
      ),
    );
    const winners = outcomes.filter((o) => o.ok);
    assert.equal(winners.length, 1);
    for (const o of outcomes)
      if (!o.ok) assert.equal(o.reason, "agent_present: Room already has an agent");
    const listed = await a.registry.list("office-1");
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.role, "agent");
    assert.deepEqual(await b.registry.counts(), { offices: 1, agents: 1, computers: 0 });
  });

  void test("of 40 concurrent Computers named alike, exactly one gets in; other names all do", async () => {
    const [a, b] = await pair();
    const same = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).registry.join(member(`c${i}`, "computer", "pc", "office-2")),
      ),
    );
    assert.equal(same.filter((o) => o.ok).length, 1);
    for (const o of same) {
      if (!o.ok)
        assert.equal(o.reason, "name_taken: A Computer named 'pc' is already in office 'office-2'");
    }
    const distinct = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).registry.join(member(`d${i}`, "computer", `pc${i}`, "office-2")),
      ),
    );
    assert.ok(distinct.every((o) => o.ok));
    assert.equal((await a.registry.list("office-2")).length, 21);
    // The same name in another office is a different Computer.
    assert.ok((await b.registry.join(member("e1", "computer", "pc", "office-3"))).ok);
  });

  void test("lookups: findComputer is scoped to the office, list is Agent first then join order", async () => {
    const [a, b] = await pair();
    assert.ok((await a.registry.join(member("c1", "computer", "one", "o"))).ok);
    assert.ok((await b.registry.join(member("c2", "computer", "two", "o"))).ok);
    assert.ok((await b.registry.join(member("g1", "agent", "boss", "o"))).ok);
    assert.ok((await a.registry.join(member("c3", "computer", "three", "other"))).ok);
    const found = await a.registry.findComputer("o", "two");
    assert.deepEqual(found, {
      sid: "c2",
      name: "two",
      role: "computer",
      officeId: "o",
      a2cVersion: "0.3.0",
      nodeId: "B",
    });
    assert.equal(await a.registry.findComputer("o", "three"), null);
    assert.equal(await a.registry.findComputer("o", "boss"), null, "an Agent is not a Computer");
    assert.deepEqual(
      (await b.registry.list("o")).map((m) => m.sid),
      ["g1", "c1", "c2"],
    );
    assert.equal((await a.registry.memberOf("c2"))?.name, "two");
    assert.equal((await b.registry.memberOf("c1"))?.nodeId, "A");
  });

  void test("a Computer switches offices; an Agent must leave first; rejoining is unchanged", async () => {
    const [a, b] = await pair();
    assert.ok((await a.registry.join(member("c", "computer", "pc", "x"))).ok);
    // A failed switch (name taken in y) leaves it where it was.
    assert.ok((await b.registry.join(member("c2", "computer", "pc", "y"))).ok);
    const refused = await a.registry.join(member("c", "computer", "pc", "y"));
    assert.equal(refused.ok, false);
    assert.equal((await a.registry.findComputer("x", "pc"))?.sid, "c");
    const moved = await a.registry.join(member("c", "computer", "pc", "z"));
    assert.ok(moved.ok);
    assert.equal(moved.previous?.officeId, "x");
    assert.equal(moved.unchanged, false);
    assert.equal(await a.registry.findComputer("x", "pc"), null);
    assert.deepEqual(await a.registry.list("x"), []);
    const again = await a.registry.join(member("c", "computer", "pc", "z"));
    assert.ok(again.ok && again.unchanged);
    const renamed = await a.registry.join(member("c", "computer", "other", "z"));
    assert.equal(renamed.ok, false);

    assert.ok((await b.registry.join(member("g", "agent", "boss", "x"))).ok);
    const agentMove = await b.registry.join(member("g", "agent", "boss", "z"));
    assert.equal(agentMove.ok, false);
    if (!agentMove.ok) assert.match(agentMove.reason, /leave it before joining another/);
    assert.equal(await b.registry.leave("g", "wrong-office"), null);
    assert.equal((await b.registry.leave("g", "x"))?.name, "boss");
    assert.ok((await b.registry.join(member("g", "agent", "boss", "z"))).ok);
    assert.equal((await a.registry.remove("c"))?.officeId, "z");
    assert.equal(await a.registry.remove("c"), null);
    assert.deepEqual(await a.registry.counts(), { offices: 2, agents: 1, computers: 1 });
  });
});

void describe("node life cycle", () => {
  // These nodes tick only when the test says so (`heartbeat.tick()`): no timers, no races.
  async function manualPair(): Promise<[TestNode, TestNode]> {
    const prefix = `t${(prefixSeq += 1)}`;
    const a = await node(prefix, "A", { start: false, ttlMs: 5_000 });
    const b = await node(prefix, "B", { start: false, ttlMs: 5_000 });
    for (const n of [a, b]) {
      await n.sub.subscribe(n.registry.livenessChannel(), () => undefined);
      await n.registry.registerNode(5_000);
    }
    return [a, b];
  }

  void test("a crashed node (connections gone) is reaped at once when its name is needed", async () => {
    const [a, b] = await manualPair();
    assert.ok((await b.registry.join(member("cb", "computer", "pc", "o"))).ok);
    assert.ok((await b.registry.join(member("gb", "agent", "boss", "o"))).ok);
    // While B lives, its entries hold and a reaping pass leaves it alone.
    await a.heartbeat.tick();
    assert.equal(a.reaped.length, 0);
    assert.equal((await a.registry.join(member("x", "computer", "pc", "o"))).ok, false);
    // SIGKILL of node B's process closes its Redis connections: its liveness channel empties.
    b.sub.destroy();
    await subscribersGone(a, b.registry.livenessChannel());
    const rejoin = await a.registry.join(member("cb2", "computer", "pc", "o"));
    assert.ok(rejoin.ok, "the name is free again without waiting for B's TTL");
    assert.equal(a.reaped.length, 1);
    assert.equal(a.reaped[0]?.node, "B");
    assert.deepEqual(a.reaped[0]?.members.map((m) => m.sid).sort(), ["cb", "gb"]);
    assert.deepEqual(
      (await a.registry.list("o")).map((m) => m.sid),
      ["cb2"],
    );
    assert.deepEqual(await a.registry.nodes(), ["A"]);
    await a.heartbeat.tick();
    assert.equal(a.reaped.length, 1, "each departure is reported once");
  });

  void test("a hung node (heartbeat key expired, connection alive) is reaped, then fences", async () => {
    const [a, hung] = await manualPair();
    assert.ok((await hung.registry.join(member("h1", "computer", "pc", "o"))).ok);
    const key = `${hung.registry.prefix}:n:${hung.registry.nodeId}:alive`;
    const cmd = await client();
    const ttl = Number(await cmd.sendCommand(["PTTL", key]));
    assert.ok(ttl > 0 && ttl <= 5_000, `the heartbeat key expires (PTTL ${ttl})`);
    // What Redis does when the TTL runs out without a heartbeat:
    await cmd.sendCommand(["DEL", key]);
    await a.heartbeat.tick();
    assert.equal(a.reaped.length, 1);
    assert.equal(await a.registry.findComputer("o", "pc"), null);
    // The hung node wakes up: its heartbeat tells it that it was reaped, and it fences.
    await hung.heartbeat.tick();
    assert.equal(hung.fenced, 1);
    const back = await hung.registry.join(member("h2", "computer", "pc", "o"));
    assert.ok(back.ok, "registered again after fencing");
  });

  void test("a clean stop removes the node and its members without waiting for a TTL", async () => {
    const [a, b] = await manualPair();
    assert.ok((await b.registry.join(member("s1", "computer", "pc", "o"))).ok);
    await b.heartbeat.stop();
    assert.deepEqual(await a.registry.nodes(), ["A"]);
    assert.deepEqual(await a.registry.list("o"), []);
    assert.equal(a.reaped.length, 0);
    const late = await b.registry.join(member("s2", "computer", "pc", "o"));
    assert.equal(late.ok, false, "a stopped node cannot add members");
  });
});
