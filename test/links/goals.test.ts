// @pure
/**
 * The links section's goals and report rows (bench/goals-links.ts, bench/report/build-links.ts),
 * judged on section data built here: every goal is met by clean figures, missed by the figure it
 * names, and not measured when the run's plan did not cover it (the quick plan).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { linkGoals } from "../../bench/goals-links.ts";
import { makePlan } from "../../bench/lib/plan.ts";
import { linkSizingBlocks, linksBlocks } from "../../bench/report/build-links.ts";
import { toMarkdown } from "../../bench/report/doc.ts";
import type { Report } from "../../bench/report/types.ts";
import type {
  FairnessCase,
  LatencyByKind,
  LinkCase,
  LinkCaseRun,
  LinksData,
} from "../../bench/sections/links.ts";
import type { Direction } from "../../scripts/links/topology.ts";
import type { CodingCase, CodingContent, CodingRun } from "../../bench/sections/links-coding.ts";

const MiB = 1024 * 1024;

function latency(p95: number): LatencyByKind {
  const s = { n: 30, failed: 0, p50: p95 / 2, p95, max: p95 * 1.2 };
  return { tool_call: s, get_skills: s, all: s };
}

function run(
  build: string,
  o: { utilization?: number; duringP95?: number; queue?: number } = {},
): LinkCaseRun {
  return {
    build,
    loadAvg: [0.1, 0.1, 0.1],
    download: {
      ok: true,
      error: null,
      seconds: 25,
      bytes: 60 * MiB,
      carriage: "binary",
      mbps: 2.4,
      utilization: o.utilization ?? 0.95,
      stats: { resumes: 0 },
      chunkRequests: 120,
      chunkFailures: {},
      logs: {},
    },
    honest: {
      busy: 0,
      timeouts: 0,
      resumes: 0,
      serverRefusals: {},
      relayNotAnswered: {},
      disconnects: {},
    },
    wire: { bytes: 63 * MiB, drops: 0, perPayloadByte: 1.048 },
    latency: {
      idle: latency(20),
      during: latency(o.duringP95 ?? 60),
      idleOther: latency(20),
      duringOther: latency(40),
    },
    serverQueue: { maxBytes: o.queue ?? 256 * 1024, samples: 200, failures: 0 },
    probeIntervalMs: 400,
  };
}

function linkCase(direction: Direction, rateMbit: number | null, runs: LinkCaseRun[]): LinkCase {
  return {
    id: `${direction}-${rateMbit ?? "unshaped"}`,
    direction,
    rateMbit,
    oneWayDelayMs: 0,
    extra: false,
    shape: {
      direction,
      qdisc: rateMbit === null ? "pfifo" : "tbf",
      at: "x",
      rateBitsPerSecond: rateMbit === null ? null : rateMbit * 1e6,
      burstBytes: 15140,
      latencyMs: 100,
    },
    assetBytes: 60 * MiB,
    runs,
  };
}

function fair(kind: FairnessCase["kind"], jain: number): FairnessCase {
  return {
    id: `fair-${kind}`,
    kind,
    direction: "uplink",
    rateMbit: 20,
    shape: {
      direction: "uplink",
      qdisc: "tbf",
      at: "x",
      rateBitsPerSecond: 20e6,
      burstBytes: 15140,
      latencyMs: 100,
    },
    assetBytes: 30 * MiB,
    runs: [
      {
        build: "ours",
        loadAvg: [0, 0, 0],
        overlapSeconds: 20,
        jain,
        pulls: [
          {
            agent: 0,
            carriage: "binary",
            ok: true,
            error: null,
            seconds: 25,
            overlapBytes: 1,
            share: 1,
          },
          {
            agent: 0,
            carriage: "binary",
            ok: true,
            error: null,
            seconds: 25,
            overlapBytes: 1,
            share: 1,
          },
        ],
      },
    ],
  };
}

function fullData(tweak: (c: LinkCase) => LinkCaseRun = () => run("ours")): LinksData {
  const plan = makePlan(false).links;
  return {
    builds: [{ label: "ours", commit: "abc1234" }],
    plan,
    cases: plan.directions
      .flatMap((d) => plan.rates.map((r) => linkCase(d, r, [])))
      .map((c) => ({ ...c, runs: [tweak(c)] })),
    fairness: (["same-agent", "two-agents", "binary-base64"] as const).map((k) => fair(k, 0.99)),
    coding: [
      coding("markdown", 2, 3.5),
      coding("json", 20, 5),
      coding("incompressible", 2, 0.99),
      coding("incompressible", null, 0.97),
    ],
    notes: [],
  };
}

/** A coding case whose every pair ran `ratio` times faster with compression on. */
function coding(content: CodingContent, rateMbit: number | null, ratio: number): CodingCase {
  const runOf = (mode: "on" | "off", mbps: number): CodingRun => ({
    mode,
    loadAvg: [0, 0, 0],
    ok: true,
    error: null,
    seconds: 4,
    mbps,
    wirePerByte: mode === "on" ? 1 / ratio : 1.01,
    codings: { [mode === "on" && ratio > 1.5 ? "br" : "identity"]: 10 },
    cpuMsPerMb: { computer: 5, agent: 2, server: 1 },
    setbacks: 0,
  });
  return {
    id: `coding-${content}-${rateMbit ?? "unshaped"}`,
    content,
    direction: "uplink",
    rateMbit,
    shape: {
      rateBitsPerSecond: rateMbit === null ? 0 : rateMbit * 1e6,
      burstBytes: 15140,
      latencyMs: 100,
    },
    assetBytes: 8 * MiB,
    runs: [runOf("on", ratio), runOf("off", 1), runOf("off", 1), runOf("on", ratio)],
    ratios: [ratio, ratio],
  } as unknown as CodingCase;
}

function reportWith(d: LinksData): Report {
  return {
    sections: { links: { status: "done", seconds: 1, data: d, notes: [] } },
  } as unknown as Report;
}

const status = (d: LinksData): Record<string, string> =>
  Object.fromEntries(linkGoals(reportWith(d)).map((g) => [g.id, g.status]));

void test("clean figures meet every links goal", () => {
  assert.deepEqual(status(fullData()), {
    "links-complete": "met",
    "links-utilization": "met",
    "links-latency": "met",
    "links-fairness": "met",
    "links-queue": "met",
    "links-coded-text": "met",
    "links-coded-incompressible": "met",
    "links-coded-loopback": "met",
  });
});

void test("each coding goal is missed by the case under its floor, and not measured without cases", () => {
  const slow = fullData();
  slow.coding = [coding("markdown", 2, 2.1), coding("incompressible", 2, 0.9)];
  const s = status(slow);
  assert.equal(s["links-coded-text"], "missed");
  assert.equal(s["links-coded-incompressible"], "missed");
  assert.equal(s["links-coded-loopback"], "not measured");
  const g = linkGoals(reportWith(slow)).find((x) => x.id === "links-coded-text")!;
  assert.match(g.measured, /coding-markdown-2 2\.10×/);
  const none = fullData();
  delete none.coding;
  assert.equal(status(none)["links-coded-text"], "not measured");
});

void test("each goal is missed by the figure it judges, and says which case", () => {
  const busy = fullData((c) => {
    const r = run("ours");
    if (c.id === "uplink-2") r.honest.busy = 3;
    return r;
  });
  const g = linkGoals(reportWith(busy)).find((x) => x.id === "links-complete")!;
  assert.equal(g.status, "missed");
  assert.match(g.measured, /11 of 12 cases clean; uplink-2: 3 busy/);

  // An SDK whose pull bypasses the client's getBlobChunk cannot be judged clean on silence.
  const unseen = fullData((c) => {
    const r = run("ours");
    if (c.id === "downlink-20") r.download.chunkRequests = 0;
    return r;
  });
  assert.match(
    linkGoals(reportWith(unseen)).find((x) => x.id === "links-complete")!.measured,
    /downlink-20: the SDK's chunk requests were not seen on its client/,
  );

  const slow = fullData((c) => run("ours", { utilization: c.id === "downlink-5" ? 0.8 : 0.95 }));
  assert.equal(status(slow)["links-utilization"], "missed");
  // 1 Mbit/s is outside the utilization goal ("from 2 Mbit/s up").
  assert.equal(
    status(fullData((c) => run("ours", { utilization: c.rateMbit === 1 ? 0.5 : 0.95 })))[
      "links-utilization"
    ],
    "met",
  );

  const blocked = fullData((c) => run("ours", { duringP95: c.id === "uplink-20" ? 3400 : 60 }));
  const lat = linkGoals(reportWith(blocked)).find((x) => x.id === "links-latency")!;
  assert.equal(lat.status, "missed");
  assert.match(lat.measured, /uplink-20 p95 3400 ms vs idle 20/);

  const queued = fullData((c) => run("ours", { queue: c.id === "downlink-2" ? 5 * MiB : 0 }));
  assert.equal(status(queued)["links-queue"], "missed");

  // A case beside the matrix (a fixed size) counts for completion, not for the sizing figures.
  const long = fullData();
  const extra = linkCase("uplink", 2, [run("ours")]);
  extra.runs[0]!.honest.timeouts = 6;
  long.cases.push({ ...extra, id: "uplink-2-16MiB", extra: true });
  const c = linkGoals(reportWith(long)).find((x) => x.id === "links-complete")!;
  assert.equal(c.status, "missed");
  assert.match(c.measured, /12 of 13 cases clean; uplink-2-16MiB: 6 timeouts/);
  assert.equal(status(long)["links-utilization"], "met");

  const unfair = fullData();
  unfair.fairness[2] = fair("binary-base64", 0.77);
  assert.equal(status(unfair)["links-fairness"], "missed");
});

void test("a plan that does not cover a goal's cases leaves it not measured", () => {
  const quick = makePlan(true).links;
  const d: LinksData = {
    builds: [{ label: "ours", commit: null }],
    plan: quick,
    cases: [linkCase("uplink", 20, [run("ours")]), linkCase("downlink", 20, [run("ours")])],
    fairness: [fair("same-agent", 0.99)],
    notes: [],
  };
  for (const g of linkGoals(reportWith(d))) {
    assert.equal(g.status, "not measured", g.id);
    assert.match(g.why ?? "", /the run's plan has no/);
  }
  const skipped = linkGoals({
    sections: { links: { status: "skipped", seconds: 0, reason: "the link harness needs root" } },
  } as unknown as Report);
  assert.ok(skipped.every((g) => g.status === "not measured" && /needs root/.test(g.why ?? "")));
});

void test("the report gives the sizing table, and the baseline beside ours", () => {
  const d = fullData((c) => run("ours", { utilization: c.rateMbit === 2 ? 0.912 : 0.95 }));
  for (const c of d.cases) c.runs.push(run("baseline", { utilization: 0.5, duringP95: 3400 }));
  d.builds.push({ label: "baseline", commit: "fd7eaf6" });
  // Our build's table opens the report (its summary); the baseline's stays in the links section.
  const ours = toMarkdown(linkSizingBlocks(d));
  assert.match(ours, /### Sizing for a link/);
  assert.match(ours, /\| 2 Mbit\/s +\| 91\.2% +\| 60\.0 ms \(idle 20\.0\)/);
  const md = toMarkdown(linksBlocks(d));
  assert.match(md, /### Sizing for a link, baseline build/);
  assert.match(md, /\| 2 Mbit\/s +\| 50\.0% +\| 3400 ms/);
  assert.match(md, /baseline \(fd7eaf6\)/);
  const complete = linkGoals(reportWith(d)).find((x) => x.id === "links-complete")!;
  assert.match(complete.evidence, /Baseline \(fd7eaf6\), same run/);
});
