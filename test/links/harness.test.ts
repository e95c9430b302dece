/**
 * The link harness itself (scripts/links/): each direction is shaped at its rate on its router's
 * forwarding hop and counted there, Agents share their downlink's queue, the delay stage adds
 * what it says, and nothing of a topology outlives it: not on close, not when its owner exits
 * without closing, not when its owner is killed (the next harness removes what it left).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startDelayStage, startNsTool, type NsTool } from "../../scripts/links/stack.ts";
import { linksUnavailable, listNamespaces } from "../../scripts/links/system.ts";
import {
  openLinks,
  type Direction,
  type Links,
  type QueueCounters,
} from "../../scripts/links/topology.ts";
import { REPO_ROOT } from "../support/agent-stack.ts";

const unavailable = linksUnavailable();
const MB = 1_000_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `pid` is gone within `ms` (a killed process has no event to wait on when it is not our child). */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (alive(pid)) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/**
 * The rate a direction's queue forwards while a transfer keeps it busy: its byte counter read once
 * `from` bytes and once `to` bytes have passed (after TCP's start), over the time between. A read
 * is `tc` run as a process; only reads that took at most 30 ms are used, so each one's moment is
 * known to ±15 ms even on a busy machine. Any read between them that found the queue empty is
 * reported: then the sender, not the shaper, set the pace.
 */
async function measuredRate(
  links: Links,
  direction: Direction,
  from: number,
  to: number,
  running: Promise<unknown>,
): Promise<{ rate: number; idleReads: number }> {
  let done = false;
  void running.finally(() => (done = true));
  const read = async (): Promise<{ at: number; took: number; c: QueueCounters }> => {
    const t0 = performance.now();
    const c = (await links.counters())[direction];
    const t1 = performance.now();
    return { at: (t0 + t1) / 2, took: t1 - t0, c };
  };
  const base = (await read()).c.bytes;
  let first: { at: number; c: QueueCounters } | undefined;
  let idleReads = 0;
  for (;;) {
    assert.ok(!done, `the transfer ended before ${to} bytes crossed the ${direction} queue`);
    const r = await read();
    const passed = r.c.bytes - base;
    if (first && r.c.backlogBytes === 0) idleReads++;
    if (r.took <= 30) {
      if (!first && passed >= from) first = r;
      else if (first && passed >= to) {
        return { rate: ((r.c.bytes - first.c.bytes) * 8) / ((r.at - first.at) / 1000), idleReads };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Within 4% of the set rate. A shaper never lets more through; less only when the sender left
 * its queue empty for a moment (a starved process on a busy machine), which is then said.
 */
function assertRate(rate: number, set: number, idleReads: number): void {
  const words = `measured ${(rate / 1e6).toFixed(2)} Mbit/s of ${set / 1e6}`;
  assert.ok(rate <= 1.04 * set, words);
  if (idleReads === 0) assert.ok(rate >= 0.96 * set, words);
  else assert.ok(rate >= 0.8 * set, `${words}; the queue was empty at ${idleReads} reads`);
}

void describe("link harness", { skip: unavailable ?? false }, () => {
  let links: Links;
  let server: NsTool;
  let computer: NsTool;
  let agents: NsTool[];

  before(async () => {
    links = await openLinks({
      agents: 2,
      computers: 2,
      prefix: "lkt",
      uplink: { rateMbit: 10 },
      downlink: { rateMbit: 20 },
    });
    [server, computer, ...agents] = await Promise.all([
      startNsTool(links, links.server),
      startNsTool(links, links.computers[0]!),
      ...links.agents.map((h) => startNsTool(links, h)),
    ]);
  });
  after(() => links?.close());

  void test("each direction is shaped at its rate, reported as the kernel holds it", async () => {
    const shapes = await links.shapes();
    assert.equal(shapes.uplink.qdisc, "tbf");
    assert.equal(shapes.uplink.rateBitsPerSecond, 10e6);
    assert.match(shapes.uplink.at, /-rc\/up0$/);
    assert.equal(shapes.downlink.rateBitsPerSecond, 20e6);
    assert.match(shapes.downlink.at, /-ra\/br0$/);
    for (const s of Object.values(shapes)) {
      assert.equal(s.latencyMs, 100);
      assert.ok(s.burstBytes !== null && s.burstBytes >= 10 * 1514, `burst ${s.burstBytes}`);
    }
  });

  void test("the downlink forwards at its rate, counted on its queue only", async () => {
    const port = await server.tcpSource(9001, 8 * MB);
    const before = await links.counters();
    const sink = agents[0]!.tcpSink(links.server.addressForAgents, port);
    const { rate, idleReads } = await measuredRate(links, "downlink", 1 * MB, 6.5 * MB, sink);
    const got = await sink;
    const c = await links.counters();
    assert.equal(got.bytes, 8 * MB);
    assertRate(rate, 20e6, idleReads);
    const wire = c.downlink.bytes - before.downlink.bytes;
    assert.ok(wire >= 8 * MB && wire < 8.6 * MB, `downlink counted ${wire} bytes for 8 MB`);
    // The transfer's acks go Agent -> Server: they never cross the Computers' uplink.
    assert.ok(c.uplink.bytes - before.uplink.bytes < 0.01 * MB);
  });

  void test("the uplink forwards at its rate", async () => {
    // 3 MB past the measured span: room for counter reads that are slow on a busy machine.
    const port = await computer.tcpSource(9002, 8 * MB);
    const sink = server.tcpSink(links.computers[0]!.address, port);
    const { rate, idleReads } = await measuredRate(links, "uplink", 0.5 * MB, 5 * MB, sink);
    assert.equal((await sink).bytes, 8 * MB);
    assertRate(rate, 10e6, idleReads);
  });

  void test("Agents share one downlink queue", async () => {
    const port = await server.tcpSource(9003, 3 * MB);
    const before = await links.portBytes();
    const t0 = performance.now();
    const both = await Promise.all(
      agents.map((a) => a.tcpSink(links.server.addressForAgents, port)),
    );
    const seconds = (performance.now() - t0) / 1000;
    const ports = await links.portBytes();
    assert.deepEqual(
      both.map((r) => r.bytes),
      [3 * MB, 3 * MB],
    );
    // Two 3 MB transfers through one 20 Mbit/s queue take at least 2.4 s; through two, 1.2.
    assert.ok(seconds > 2.3, `both done in ${seconds.toFixed(2)} s`);
    for (const [i, b] of ports.agents.entries()) {
      assert.ok(
        b - before.agents[i]! >= 3 * MB,
        `agent ${i}'s port carried ${b - before.agents[i]!}`,
      );
    }
  });

  void test("the delay stage adds twice its delay to a round trip", async () => {
    const echo = await server.echoServer(9004);
    await startDelayStage(links, links.server, {
      listenPort: 9005,
      target: `127.0.0.1:${echo}`,
      delayMs: 40,
    });
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    const direct = median(await agents[1]!.rtt(links.server.addressForAgents, echo, 15));
    const delayed = median(await agents[1]!.rtt(links.server.addressForAgents, 9005, 15));
    const added = delayed - direct;
    assert.ok(
      // Two 40 ms waits, less a few ms of noise in the two medians on a busy machine.
      added >= 75 && added < 100,
      `the stage added ${added.toFixed(1)} ms (direct ${direct.toFixed(1)})`,
    );
  });
});

void describe("link harness cleanup", { skip: unavailable ?? false }, () => {
  void test("close removes every namespace and process", async () => {
    const links = await openLinks({ agents: 2, computers: 1, prefix: "lkt" });
    const p = links.spawn(links.computers[0]!, {
      name: "sleeper",
      command: process.execPath,
      args: ["-e", "setInterval(() => {}, 1000)"],
    });
    assert.ok(links.namespaces.every((n) => listNamespaces().includes(n)));
    await links.close();
    const left = listNamespaces();
    assert.deepEqual(
      links.namespaces.filter((n) => left.includes(n)),
      [],
    );
    assert.equal(alive(p.pid), false);
  });

  /** Runs links-owner.ts, which opens a topology and ends without closing it. */
  async function owner(how: "exit" | "kill"): Promise<{ namespaces: string[]; pid: number }> {
    const child = spawn(
      process.execPath,
      [
        "--conditions=@a2c-smcp/source",
        "--import",
        "tsx",
        join(REPO_ROOT, "test/links/links-owner.ts"),
        how,
      ],
      { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    await new Promise((resolve) => child.once("exit", resolve));
    return JSON.parse(out.trim()) as { namespaces: string[]; pid: number };
  }

  void test("an owner that exits without closing leaves nothing", async () => {
    const o = await owner("exit");
    const left = listNamespaces();
    assert.deepEqual(
      o.namespaces.filter((n) => left.includes(n)),
      [],
    );
    assert.ok(await goneWithin(o.pid, 5000), `process ${o.pid} still runs`);
  });

  void test("what a killed owner left is removed by the next harness", async () => {
    const o = await owner("kill");
    assert.ok(
      o.namespaces.every((n) => listNamespaces().includes(n)),
      "a killed owner cleans nothing",
    );
    const next = await openLinks({ agents: 1, computers: 1, prefix: "lkt" });
    await next.close();
    const left = listNamespaces();
    assert.deepEqual(
      o.namespaces.filter((n) => left.includes(n)),
      [],
    );
    assert.ok(await goneWithin(o.pid, 5000), `process ${o.pid} still runs`);
  });
});
