// @pure
/**
 * The upload link goals (bench/goals-upload-links.ts) and the paths report's upload table, judged
 * on section data built here: clean figures meet every goal, each goal is missed by the figure it
 * judges and names the case, and a run without upload cases leaves them not measured.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { uploadLinkGoals } from "../../bench/goals-upload-links.ts";
import { makePlan } from "../../bench/lib/plan.ts";
import { toMarkdown } from "../../bench/report/doc.ts";
import { pathsBlocks } from "../../bench/report/build-paths.ts";
import type { Report } from "../../bench/report/types.ts";
import type { PathsData } from "../../bench/sections/paths.ts";
import type { UploadPathCase } from "../../bench/sections/paths-upload.ts";

const MiB = 1024 * 1024;
const stats = { n: 40, failed: 0, p50: 110, p95: 130, max: 150 };

function upload(
  direction: UploadPathCase["direction"],
  rateMbit: number,
  rttMs: number,
): UploadPathCase {
  const steadyBps = rateMbit * 0.956e6;
  return {
    id: `upload-${direction}-${rateMbit}-rtt${rttMs}`,
    build: "ours",
    direction,
    rateMbit,
    rttMs,
    assetBytes: 24 * MiB,
    ceiling: {
      direction,
      bytes: 1,
      seconds: 1,
      bps: steadyBps,
      steadyBps,
      steadyFrom: "kernel",
      wireBytes: 1,
      wirePerPayloadByte: 1.046,
      drops: 0,
      minRttMs: rttMs,
      congestion: "cubic",
      deliveryRates: [],
      utilization: 0.95,
      steadyUtilization: 0.956,
    },
    loadAvg: [1, 1, 1],
    ok: true,
    error: null,
    seconds: 10,
    carriage: "binary",
    bps: 0.93 * steadyBps,
    utilization: 0.89,
    ofCeiling: 0.93,
    wirePerPayloadByte: 1.05,
    drops: 0,
    idle: { ...stats, p95: 40 + rttMs },
    during: { ...stats, p95: 150 + rttMs },
    serverHeldMaxBytes: 64 * 1024,
    serverHeldSamples: 100,
    serverSendQMaxBytes: 300 * 1024,
    agentSendQMaxBytes: 200 * 1024,
    perSecondMbit: [],
    stats: { busy: 0, rewinds: 0, restarts: 0 },
  };
}

function data(uploads: UploadPathCase[]): PathsData {
  return {
    builds: [{ label: "ours", commit: null }],
    plan: makePlan(false).paths,
    roundTrips: [],
    steps: [],
    latecomers: [],
    longAnswers: [],
    uploads,
    notes: [],
  };
}

const clean = (): UploadPathCase[] => [
  ...[2, 20, 200].flatMap((rate) => [0, 100].map((rtt) => upload("agentUplink", rate, rtt))),
  upload("computerDownlink", 2, 0),
];

const report = (d: PathsData): Report =>
  ({
    sections: { paths: { status: "done", seconds: 1, data: d, notes: [] } },
  }) as unknown as Report;
const goal = (d: PathsData, id: string) => uploadLinkGoals(report(d)).find((g) => g.id === id)!;

void test("clean figures meet every upload link goal; the report lists every case", () => {
  for (const g of uploadLinkGoals(report(data(clean())))) assert.equal(g.status, "met", g.id);
  const md = toMarkdown(pathsBlocks(data(clean())));
  for (const c of clean()) assert.ok(md.includes(c.id), c.id);
});

void test("each goal is missed by the figure it judges, naming the case", () => {
  const slow = clean();
  slow[3]!.ofCeiling = 0.72;
  const g1 = goal(data(slow), "upload-links-utilization");
  assert.equal(g1.status, "missed");
  assert.match(g1.measured, /upload-agentUplink-20-rtt100 72%/);

  const waiting = clean();
  waiting[6]!.during = { ...stats, p95: 400 };
  assert.equal(goal(data(waiting), "upload-links-latency").status, "missed");

  const holding = clean();
  holding[6]!.serverHeldMaxBytes = 3 * MiB;
  const g3 = goal(data(holding), "upload-links-server-held");
  assert.equal(g3.status, "missed");
  assert.match(g3.measured, /upload-computerDownlink-2-rtt0: queued at most 3/);
});

void test("without upload cases every goal is not measured, and says why", () => {
  for (const g of uploadLinkGoals(report(data([])))) {
    assert.equal(g.status, "not measured", g.id);
    assert.match(g.why ?? "", /no upload case/);
  }
  for (const g of uploadLinkGoals({ sections: {} } as unknown as Report)) {
    assert.match(g.why ?? "", /not run/);
  }
});
