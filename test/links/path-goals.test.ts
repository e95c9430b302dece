// @pure
/**
 * The paths section's goals (bench/goals-links.ts `pathGoals`) and its report part, judged on
 * section data built here: clean figures meet every goal, each goal is missed by the figure it
 * judges and names the case, and a plan without the cases leaves them not measured.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { pathGoals } from "../../bench/goals-links.ts";
import { makePlan } from "../../bench/lib/plan.ts";
import { toMarkdown } from "../../bench/report/doc.ts";
import { pathsBlocks } from "../../bench/report/build-paths.ts";
import type { Report } from "../../bench/report/types.ts";
import type { PathRun, PathsData, RoundTripCase } from "../../bench/sections/paths.ts";

const MiB = 1024 * 1024;
const stats = { n: 40, failed: 0, p50: 110, p95: 130, max: 150 };

function pathRun(ofCeiling: number, probes: boolean): PathRun {
  return {
    build: "ours",
    loadAvg: [0.2, 0.2, 0.2],
    probes,
    ok: true,
    error: null,
    seconds: 10,
    carriage: "binary",
    bps: ofCeiling * 19.1e6,
    utilization: (ofCeiling * 19.1e6) / 20e6,
    ofCeiling,
    timeouts: 0,
    busy: 0,
    resumes: 0,
    wirePerPayloadByte: 1.05,
    drops: 0,
    idle: { ...stats, p95: 110 },
    during: probes ? { ...stats, p95: 200 } : null,
    stats: {},
  };
}

function cell(direction: "uplink" | "downlink", rateMbit: number, rttMs: number): RoundTripCase {
  return {
    id: `${direction}-${rateMbit}-rtt${rttMs}`,
    direction,
    rateMbit,
    rttMs,
    shape: {
      direction,
      qdisc: "tbf",
      at: "x",
      rateBitsPerSecond: rateMbit * 1e6,
      burstBytes: 15140,
      latencyMs: 100,
    },
    assetBytes: 24 * MiB,
    ceiling: {
      direction,
      bytes: 15e6,
      seconds: 7,
      bps: 17e6,
      steadyBps: 19.1e6,
      steadyFrom: "kernel",
      wireBytes: 15.7e6,
      wirePerPayloadByte: 1.046,
      drops: 0,
      minRttMs: rttMs + 0.2,
      congestion: "bbr",
      deliveryRates: [19.1e6],
      utilization: 0.85,
      steadyUtilization: 0.955,
    },
    runs: [true, false, true, false, true].map((p) => pathRun(0.95, p)),
  };
}

function clean(): PathsData {
  const roundTrips: RoundTripCase[] = [];
  for (const d of ["uplink", "downlink"] as const)
    for (const rate of [20, 50]) for (const rtt of [100, 200]) roundTrips.push(cell(d, rate, rtt));
  return {
    builds: [{ label: "ours", commit: null }],
    plan: makePlan(false).paths,
    roundTrips,
    steps: [
      {
        id: "step-uplink-50-2-50-rtt0",
        build: "ours",
        direction: "uplink",
        fromMbit: 50,
        toMbit: 2,
        rttMs: 0,
        assetBytes: 64 * MiB,
        ok: true,
        error: null,
        seconds: 30,
        timeouts: 0,
        busy: 0,
        wirePerPayloadByte: 1.05,
        drops: 0,
        idleP95: 20,
        latencyBackSeconds: 1.5,
        worstMs: 400,
        downToNinetySeconds: 2,
        upToNinetySeconds: 1.2,
        perSecondMbit: [47, 47, 1.9, 1.9],
      },
    ],
    latecomers: [0, 100].map((rttMs) => ({
      id: `latecomer-uplink-20-rtt${rttMs}`,
      build: "ours",
      rateMbit: 20,
      rttMs,
      windowBytes: [24 * MiB, 22 * MiB],
      windowSeconds: 20,
      jain: 0.998,
      drops: 0,
      idleP95: 20 + rttMs,
      during: { ...stats, p95: 100 + rttMs },
      pulls: [],
    })),
    longAnswers: (["held", "packets"] as const).flatMap((form) =>
      [600, 1800].map((rttMs) => ({
        id: `answers-${form}-rtt${rttMs}`,
        build: "ours",
        form,
        rttMs,
        assetBytes: 48 * MiB,
        ceilingBytes: 8 * MiB,
        ok: true,
        error: null,
        seconds: 20,
        perRound: [16e3, 64e3, 8 * MiB],
        roundsToCeiling: 3,
        stats: {},
        plain:
          form === "packets"
            ? { seconds: 12, perRound: [16e3, 8 * MiB], roundsToCeiling: 2 }
            : null,
      })),
    ),
    uploads: [],
    notes: [],
  };
}

const report = (d: PathsData): Report =>
  ({
    sections: { paths: { status: "done", seconds: 1, data: d, notes: [] } },
  }) as unknown as Report;
const goal = (d: PathsData, id: string) => pathGoals(report(d)).find((g) => g.id === id)!;

void test("clean figures meet every paths goal", () => {
  for (const g of pathGoals(report(clean())))
    assert.equal(g.status, "met", `${g.id}: ${g.measured}`);
});

void test("each goal is missed by the figure it judges, and says which case", () => {
  const slow = clean();
  slow.roundTrips[1]!.runs[3] = pathRun(0.88, false);
  const rt = goal(slow, "paths-round-trip");
  assert.equal(rt.status, "met", "88 % is enough at 200 ms");
  slow.roundTrips[0]!.runs[2] = pathRun(0.88, true);
  assert.equal(goal(slow, "paths-round-trip").status, "missed");
  assert.match(goal(slow, "paths-round-trip").measured, /uplink-20-rtt100: 88\.0%/);

  const waited = clean();
  waited.roundTrips[2]!.runs[0]!.during = { ...stats, p95: 300 };
  assert.match(
    goal(waited, "paths-round-trip").measured,
    /uplink-50-rtt100: small requests p95 300 ms \(idle 110\)/,
  );

  const few = clean();
  few.roundTrips[5]!.runs.length = 4;
  assert.match(goal(few, "paths-round-trip").measured, /downlink-20-rtt200: 4 runs/);

  const step = clean();
  step.steps[0]!.timeouts = 2;
  assert.equal(goal(step, "paths-rate-step").status, "missed");
  const twice = clean();
  twice.steps[0]!.wirePerPayloadByte = 1.1;
  assert.equal(goal(twice, "paths-rate-step").status, "missed");
  const never = clean();
  never.steps[0]!.downToNinetySeconds = null;
  assert.match(goal(never, "paths-rate-step").measured, /90 % of the new rate never down/);

  const unfair = clean();
  unfair.latecomers[1]!.jain = 0.83;
  assert.equal(goal(unfair, "paths-latecomer").status, "missed");

  const stalled = clean();
  stalled.longAnswers[1]!.roundsToCeiling = null;
  assert.equal(goal(stalled, "paths-long-answers").status, "missed");
  assert.match(goal(stalled, "paths-long-answers").measured, /answers-held-rtt1800: never/);
  // The packet form is reported beside it (TCP's slow start bounds it), not judged.
  const packets = clean();
  packets.longAnswers[3]!.roundsToCeiling = null;
  assert.equal(goal(packets, "paths-long-answers").status, "met");
  assert.match(
    goal(packets, "paths-long-answers").measured,
    /answers-packets-rtt1800: never \(20\.0 s; a plain TCP flow: round 2\)/,
  );

  const shortPath = clean();
  shortPath.roundTrips[4]!.ceiling.steadyUtilization = 0.7;
  assert.equal(goal(shortPath, "paths-plain-flow").status, "missed");
});

void test("a plan without the cases leaves every goal not measured, and says why", () => {
  const quick: PathsData = {
    ...clean(),
    plan: makePlan(true).paths,
    roundTrips: [],
    steps: [],
    latecomers: [],
    longAnswers: [],
  };
  for (const g of pathGoals(report(quick))) {
    assert.equal(g.status, "not measured", g.id);
    assert.match(g.why ?? "", /the run's plan has no [^.]*case/);
  }
  for (const g of pathGoals({ sections: {} } as unknown as Report)) {
    assert.match(g.why ?? "", /section paths was not run/);
  }
  assert.match(toMarkdown(pathsBlocks(quick)), /no case of this section/);
});

void test("the report puts each download beside its plain flow", () => {
  const md = toMarkdown(pathsBlocks(clean()));
  assert.match(
    md,
    /\| uplink-20-rtt100 \| 95\.5% \/ 85\.0%, 100\.2 ms \(bbr\), 0 \| 24 MiB \| ours \| 10\.0 s, 18\.14 Mbit\/s \| 90\.7% \| 95\.0% \|/,
  );
  assert.match(
    md,
    /\| step-uplink-50-2-50-rtt0 \| ours \| 64 MiB \| 30\.0 s \| 0 \/ 0 \|.*\| 47\.0 47\.0 1\.9 1\.9 \|/,
  );
  // Every table's rows have as many cells as its head.
  for (const table of md.split("\n\n").filter((b) => b.startsWith("|"))) {
    const widths = table
      .split("\n")
      .filter((l) => l.startsWith("| "))
      .map((l) => l.split(" | ").length);
    assert.ok(
      widths.every((w) => w === widths[0]),
      table.split("\n")[0],
    );
  }
  assert.match(
    md,
    /\| answers-held-rtt600 \| ours \| the Computer holds it \| 48 MiB \| 20\.0 s \| 8 MiB \| 3 \|.*\| – \|/,
  );
  assert.match(md, /\| answers-packets-rtt600 \| ours \| in the packets \|.*\| 2, 12\.0 s \|/);
});
