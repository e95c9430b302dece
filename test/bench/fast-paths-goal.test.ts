// @pure
// The fast-paths goal (D102) judges each transport departure where it was made for, and at
// the SDK's defaults only where its transport lets it act: a departure that does not act at a
// default case runs stock code there, and its ratio (what two identical processes differ by) is
// shown, not judged. One that acts at a default and costs its role CPU there misses. Points are
// matched by direction too: raw_uploads is judged at the base64 upload, raw_acks at the pull of
// the same carriage and chunk size; a fast path this build lacks reads "not measured", unjudged.
// The Agent's upload_text is judged by the Agent's CPU per MB at the base64 upload (D116), the
// Computer's batch_writes by the Computer's at binary 16 KiB (D133).
// The section's report tables name each case's direction and give raw_uploads and upload_text
// their rows. Beside each bar the goal shows the same figure of `default again`, the default run
// once more: what two identical stacks differ by (D118).
import { test } from "node:test";
import assert from "node:assert/strict";
import { evaluateGoals } from "../../bench/goals.ts";
import {
  transportConfigs,
  type TransportConfig,
  type TransportData,
  type TransportPoint,
} from "../../bench/sections/transport.ts";
import { KiB } from "../../bench/lib/stats.ts";
import { decideFastPaths } from "../../agent/transport.ts";
import { transportBlocks } from "../../bench/report/build-transport.ts";
import type { Report } from "../../bench/report/types.ts";
import { fixtureReport } from "./fixture-report.ts";

const CASES = [
  { direction: "get", carriage: "binary", chunkBytes: 512 * KiB },
  { direction: "get", carriage: "base64", chunkBytes: 64 * KiB },
  { direction: "get", carriage: "binary", chunkBytes: 16 * KiB },
  { direction: "put", carriage: "base64", chunkBytes: 64 * KiB },
] as const;

/** The section's configurations but `absent` (those of a build that lacks that fast path). */
function configs(absent: readonly string[]): TransportConfig[] {
  const all = transportConfigs();
  for (const id of absent)
    assert.ok(
      all.some((c) => c.id === id),
      id,
    );
  return all.filter((c) => !absent.includes(c.id));
}

/**
 * Every configuration at every case with the given CPU ratios (1 unless named), every role's
 * alike unless `agentCpu` names the Agent's apart.
 */
function transportData(
  cpu: Record<string, number> = {},
  absent: readonly string[] = [],
  agentCpu: Record<string, number> = {},
): TransportData {
  const points: TransportPoint[] = configs(absent).flatMap((c) =>
    CASES.map((k) => {
      const key = `${c.id} @ ${k.direction} ${k.carriage} ${k.chunkBytes / KiB}`;
      const ratio = cpu[key] ?? 1;
      const agent = agentCpu[key] ?? ratio;
      return {
        config: c.id,
        direction: k.direction,
        carriage: k.carriage,
        chunkBytes: k.chunkBytes,
        perRoundMbps: [100],
        medianMbps: 100,
        serverCpuMsPerMb: ratio,
        computerCpuMsPerMb: ratio,
        mbpsVsDefault: 1 / ratio,
        serverCpuVsDefault: ratio,
        computerCpuVsDefault: ratio,
        agentCpuMsPerMb: agent,
        agentCpuVsDefault: agent,
        probeP50Ms: 1,
        probeP99Ms: 2,
        probeP99VsDefault: 1,
      };
    }),
  );
  return {
    fileBytes: 64 << 20,
    probeChunkBytes: 16 * KiB,
    rounds: 5,
    configs: configs(absent),
    points,
    notes: [],
  };
}

async function goalWith(d: TransportData) {
  const r: Report = await fixtureReport();
  r.sections.transport = { status: "done", seconds: 1, data: d, notes: [] };
  const g = evaluateGoals(r).find((x) => x.id === "fast-paths");
  assert.ok(g);
  return g;
}

/** Each fast path paying its bar where it was made for. */
const PAYING = {
  "without raw_acks @ get base64 64": 1.5,
  "without raw_uploads @ put base64 64": 1.6,
  "without batch_writes @ get binary 16": 1.1,
  "without computer batch_writes @ get binary 16": 1.1,
  "without agent upload_text @ put base64 64": 1.3,
};

/** With `point` at `ratio` the goal is met, and shows that ratio among the paths not acting. */
async function shownNotJudged(point: string, ratio: number, shown: RegExp): Promise<void> {
  const g = await goalWith(transportData({ ...PAYING, [point]: ratio }));
  assert.equal(g.status, "met", g.measured);
  assert.match(g.measured, shown);
}

void test("met when each pays where made for; a departure idle at a default is not judged there", async () => {
  // batch_writes does not act at 512 KiB: its 0.7 there is two processes' difference.
  await shownNotJudged(
    "without batch_writes @ get binary 512",
    0.7,
    /not acting at the defaults .*batch_writes at pull binary 512 KiB ×0\.70/,
  );
});

void test("missed when one that acts at a default costs its role CPU there", async () => {
  // raw_acks acts at the base64 default, which is also where it was made for.
  const low = await goalWith(transportData({ ...PAYING, "without raw_acks @ get base64 64": 0.9 }));
  assert.equal(low.status, "missed");
  assert.match(low.why ?? "", /raw_acks at the default pull base64 64 KiB/);
});

void test("missed when one no longer pays where it was made for", async () => {
  const g = await goalWith(
    transportData({ ...PAYING, "without computer batch_writes @ get binary 16": 1 }),
  );
  assert.equal(g.status, "missed");
  assert.match(g.why ?? "", /computer batch_writes at pull binary 16 KiB/);
});

void test("the Computer's batch_writes is judged on the Computer's CPU per MB, not the pull's MB/s (D133)", async () => {
  const at = (d: TransportData, computerCpu: number, mbps: number): TransportData => {
    const p = d.points.find(
      (q) =>
        q.config === "without computer batch_writes" &&
        q.direction === "get" &&
        q.carriage === "binary" &&
        q.chunkBytes === 16 * KiB,
    )!;
    Object.assign(p, { computerCpuVsDefault: computerCpu, mbpsVsDefault: 1 / mbps });
    return d;
  };
  // It saves the Computer a tenth of its CPU while the pull waits on other hops: met.
  const saves = await goalWith(at(transportData(PAYING), 1.1, 1));
  assert.equal(saves.status, "met", saves.measured);
  assert.match(saves.measured, /computer batch_writes at pull binary 16 KiB ×1\.10/);
  // The pull is faster beside it, the Computer's CPU the same: not its doing, missed.
  const not = await goalWith(at(transportData(PAYING), 1, 1.1));
  assert.equal(not.status, "missed");
  assert.match(not.why ?? "", /computer batch_writes at pull binary 16 KiB/);
});

void test("raw_uploads is judged at the base64 upload: missed below ×1.1 there, met when it pays", async () => {
  // The same ratio at the pull of the same carriage and chunk size is not its point.
  const low = await goalWith(
    transportData({
      ...PAYING,
      "without raw_uploads @ put base64 64": 1.05,
      "without raw_uploads @ get base64 64": 2,
    }),
  );
  assert.equal(low.status, "missed");
  assert.match(low.why ?? "", /raw_uploads at upload base64 64 KiB/);
  assert.match(low.measured, /raw_uploads at upload base64 64 KiB ×1\.05/);
  const paying = await goalWith(transportData(PAYING));
  assert.equal(paying.status, "met", paying.measured);
  assert.match(paying.measured, /raw_uploads at the default upload base64 64 KiB ×1\.60/);
  // raw_acks acts on a pull's acks, not an upload's: its upload ratio is shown, not judged.
  await shownNotJudged(
    "without raw_acks @ put base64 64",
    0.8,
    /not acting at the defaults .*raw_acks at upload base64 64 KiB ×0\.80/,
  );
});

void test("a fast path this build lacks reads not measured, and the others are still judged", async () => {
  const met = await goalWith(transportData(PAYING, ["without raw_uploads"]));
  assert.equal(met.status, "met", met.measured);
  assert.match(met.measured, /not measured \(no such fast path in this build[^)]*\): raw_uploads$/);
  const missed = await goalWith(
    transportData({ ...PAYING, "without raw_acks @ get base64 64": 0.9 }, ["without raw_uploads"]),
  );
  assert.equal(missed.status, "missed");
  assert.doesNotMatch(missed.why ?? "", /raw_uploads/);
});

void test("the report names each case's direction and gives raw_uploads a row judged at the upload", () => {
  const tables = transportBlocks(transportData(PAYING)).flatMap((b) =>
    b.kind === "table" ? [b] : [],
  );
  const [points, gains] = tables;
  assert.ok(points && gains);
  assert.ok(points.rows.some((r) => r[0] === "default" && r[1] === "upload base64 64 KiB"));
  assert.ok(points.rows.some((r) => r[0] === "default" && r[1] === "pull base64 64 KiB"));
  const col = gains.head.indexOf("upload base64 64 KiB: what it saves, gains");
  const row = gains.rows.find((r) => r[0] === "Server raw_uploads");
  assert.ok(col > 0 && row, JSON.stringify(gains.head));
  assert.equal(row[col], "Server CPU/MB ×1.60, MB/s ×1.60");
  const pull = gains.head.indexOf("pull base64 64 KiB: what it saves, gains");
  assert.match(row[pull]!, /^does not act \(stock here\)/);
  // Without that configuration (a build that lacks the fast path) the table has no row for it.
  const lacking = transportBlocks(transportData(PAYING, ["without raw_uploads"])).flatMap((b) =>
    b.kind === "table" ? [b] : [],
  );
  assert.ok(!lacking[1]!.rows.some((r) => r[0] === "Server raw_uploads"));
});

void test("the section runs the Agent without each of its fast paths: its clients stock, the rest default", () => {
  const all = transportConfigs();
  const names = Object.keys(decideFastPaths("stock"));
  assert.deepEqual(names, ["upload_text"]);
  for (const name of names) {
    const c = all.find((x) => x.id === `without agent ${name}`);
    assert.deepEqual(c, {
      id: `without agent ${name}`,
      server: "fast",
      computer: "fast",
      agent: "stock",
    });
  }
  assert.equal(all.find((c) => c.id === "stock")?.agent, "stock");
  const stockAgents = all.filter((c) => c.agent === "stock").map((c) => c.id);
  assert.deepEqual(stockAgents, ["stock", ...names.map((n) => `without agent ${n}`)]);
});

void test("upload_text is judged by the Agent's CPU per MB at the base64 upload: met at ×1.3, missed at ×1.05", async () => {
  const paying = await goalWith(transportData(PAYING));
  assert.equal(paying.status, "met", paying.measured);
  assert.match(paying.measured, /agent upload_text at upload base64 64 KiB ×1\.30/);
  assert.match(paying.measured, /agent upload_text at the default upload base64 64 KiB ×1\.30/);
  assert.match(
    paying.text,
    /agent upload_text ≥ ×1\.1 less Agent CPU per MB at upload base64 64 KiB/,
  );
  // The Server's and Computer's CPU in that configuration are not its figure.
  const low = await goalWith(
    transportData({ ...PAYING, "without agent upload_text @ put base64 64": 2 }, [], {
      "without agent upload_text @ put base64 64": 1.05,
    }),
  );
  assert.equal(low.status, "missed");
  assert.match(low.why ?? "", /agent upload_text at upload base64 64 KiB/);
  assert.match(low.measured, /agent upload_text at upload base64 64 KiB ×1\.05/);
  // It writes no pull's packets: its pull ratios are shown, not judged.
  const pulls = await goalWith(
    transportData({ ...PAYING, "without agent upload_text @ get base64 64": 0.8 }),
  );
  assert.equal(pulls.status, "met", pulls.measured);
  assert.match(
    pulls.measured,
    /not acting at the defaults .*agent upload_text at pull base64 64 KiB ×0\.80/,
  );
});

void test("upload_text reads not measured when its configuration did not run", async () => {
  const g = await goalWith(transportData(PAYING, ["without agent upload_text"]));
  assert.equal(g.status, "met", g.measured);
  assert.match(
    g.measured,
    /not measured \(no such fast path in this build[^)]*\): agent upload_text$/,
  );
  assert.doesNotMatch(g.measured, /upload_text at/);
});

void test("the report gives the Agent's CPU per MB and an Agent upload_text row acting on the base64 upload", () => {
  const [points, gains] = transportBlocks(
    transportData(PAYING, [], { "default @ put base64 64": 1, "stock @ put base64 64": 1.4 }),
  ).flatMap((b) => (b.kind === "table" ? [b] : []));
  assert.ok(points && gains);
  const agentCol = points.head.indexOf("Agent ms/MB");
  assert.ok(agentCol > 0, JSON.stringify(points.head));
  const stock = points.rows.find((r) => r[0] === "stock" && r[1] === "upload base64 64 KiB");
  assert.deepEqual(stock?.slice(agentCol, agentCol + 2), ["1.40", "×1.40"]);
  const row = gains.rows.find((r) => r[0] === "Agent upload_text");
  assert.ok(row, JSON.stringify(gains.rows.map((r) => r[0])));
  assert.match(row[1]!, /written around its base64, not through JSON\.stringify; Agent CPU per MB/);
  const put = gains.head.indexOf("upload base64 64 KiB: what it saves, gains");
  assert.equal(row[put], "Agent CPU/MB ×1.30, MB/s ×1.30");
  for (const head of ["pull base64 64 KiB", "pull binary 512 KiB", "pull binary 16 KiB"]) {
    const col = gains.head.indexOf(`${head}: what it saves, gains`);
    assert.ok(col > 0, head);
    assert.match(row[col]!, /^does not act \(stock here\)/);
  }
});

void test("the section runs the default twice, the second as the spread of identical stacks, and no Computer mask_in_place", () => {
  const all = transportConfigs();
  const { id: _a, ...again } = all.find((c) => c.id === "default again")!;
  const { id: _d, ...base } = all.find((c) => c.id === "default")!;
  assert.deepEqual(again, base);
  assert.deepEqual(
    all.filter((c) => c.id.startsWith("without computer ")).map((c) => c.id),
    ["without computer batch_writes"],
  );
});

void test("each bar shows the same figure of the default run again beside it, and none when it did not run", async () => {
  const g = await goalWith(transportData({ ...PAYING, "default again @ get binary 16": 0.95 }));
  assert.equal(g.status, "met", g.measured);
  assert.match(
    g.measured,
    /computer batch_writes at pull binary 16 KiB ×1\.10 \(default again ×0\.95\)/,
  );
  assert.match(g.measured, /raw_acks at pull base64 64 KiB ×1\.50 \(default again ×1\.00\)/);
  assert.match(g.evidence ?? "", /default again/);
  const without = await goalWith(transportData(PAYING, ["default again"]));
  assert.doesNotMatch(without.measured, /default again/);
});
