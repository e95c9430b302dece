// @both-transports
// protocol.md §5.5 (bound each client's request rate, log abnormal rates): a token bucket per
// connection over incoming events and CONNECT packets. Over the rate an event never reaches its handler; it gets a flat
// `busy` ack, is counted in /metrics and logged at WARNING (throttled, no token); another socket
// keeps its own budget.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { ServerHarness, TEST_TOKEN, emitAck, request } from "../support/server-harness.ts";
import { TokenBucket } from "../../server/namespace.ts";

const BURST = 5;
const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    lines.push(...chunk.toString().split("\n").filter(Boolean));
    done();
  },
});

let h: ServerHarness;
before(async () => {
  // 1 event a second: no refill can blur the counts of a burst sent within milliseconds.
  h = await ServerHarness.start({
    maxEventsPerSecond: 1,
    eventsBurst: BURST,
    logger: pino({ level: "warn" }, sink),
  });
});
after(() => h.close());

const REFUSED = {
  code: 500,
  message: "Too many requests: over 1 events a second",
  details: { reason: "busy", limit: "events_per_second", max: 1 },
};

void test("events over the bucket get a flat busy ack; another socket is not affected", async () => {
  // The CONNECT and the join took one token each: CONNECTs draw from the connection's bucket.
  const agent = await h.agent("office-1", "agent-1");
  const answers = await Promise.all(
    Array.from({ length: 10 }, () =>
      emitAck(agent, "client:get_tools", request("agent-1", "nobody")),
    ),
  );
  const codes = answers.map(([a]) => (a as { code: number }).code);
  const served = codes.filter((c) => c === 404).length;
  assert.equal(served, BURST - 2, `answers: ${JSON.stringify(codes)}`);
  for (const [a] of answers.filter(([a]) => (a as { code: number }).code !== 404)) {
    assert.deepEqual(a, REFUSED);
  }
  // A no-ack event over the rate is dropped without an answer or a crash.
  agent.emit("server:tool_call_cancel", { agent: "agent-1", req_id: "r", computer: "nobody" });

  const other = await h.agent("office-2", "agent-2");
  const [elsewhere] = await emitAck(other, "client:get_tools", request("agent-2", "nobody"));
  assert.equal((elsewhere as { code: number }).code, 404);

  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(metrics, /a2c_limit_refusals_total\{limit="events_per_second"\} 8\b/);

  const warnings = lines.filter((l) => l.includes("over the per-connection rate"));
  assert.equal(warnings.length, 1, "one WARNING for the whole burst");
  const w = JSON.parse(warnings[0]!) as Record<string, unknown>;
  assert.equal(w.level, 40);
  assert.equal(w.principal, "token#1");
  assert.equal(w.event, "client:get_tools");
  assert.ok(!lines.join("\n").includes(TEST_TOKEN), "no token in the log");
});

void test("the bucket refills at its rate and never above its burst", () => {
  let now = 0;
  const bucket = new TokenBucket(10, 3, () => now);
  assert.deepEqual(
    [bucket.take(), bucket.take(), bucket.take(), bucket.take()],
    [true, true, true, false],
  );
  now += 100; // one token
  assert.deepEqual([bucket.take(), bucket.take()], [true, false]);
  now += 60_000; // a long quiet spell saves up the burst only
  assert.equal([1, 2, 3, 4].filter(() => bucket.take()).length, 3);
});
