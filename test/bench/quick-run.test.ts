/**
 * The bench's smoke test: one `npm run bench -- --quick` run, as CI and a newcomer run it, every
 * section against real processes (the shipped build), then what it wrote checked from several
 * sides: every section completes (or, for what this machine lacks, says why it was skipped) and
 * every byte is verified; every goal is judged from data unless the quick plan has no case for it;
 * each sweep point is paired with a bare-relay point; rewrites deliver no corrupt byte; the user
 * view names the carriage of every row; the two-node section measures its three placements; the
 * report holds no machine path; and its HTML page renders in headless Chromium with every chart
 * readable. Speeds are not asserted: a quick run's figures are a smoke test.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { hasRedisServer } from "../../bench/lib/redis.ts";
import { median } from "../../bench/lib/stats.ts";
import type { Report } from "../../bench/report/types.ts";
import type { SweepData } from "../../bench/sections/sweep.ts";
import type { TwoNodeData } from "../../bench/sections/two-node.ts";
import type { UserViewData } from "../../bench/sections/user-view.ts";
import { REPO_ROOT } from "../../scripts/launch/roles.ts";
import { linksUnavailable } from "../../scripts/links/system.ts";
import { runBench, type BenchRun } from "../support/bench-run.ts";
import { chartProblems, openReport } from "../support/report-page.ts";

const out = mkdtempSync(join(tmpdir(), "bench-quick-"));
let run: BenchRun;
let r: Report;

before(async () => {
  run = await runBench(["--quick", "--out", out]);
  r = run.report;
});
after(() => rmSync(out, { recursive: true, force: true }));

const data = <T>(id: keyof Report["sections"]): T => {
  const s = r.sections[id];
  assert.ok(s?.status === "done", `section ${id}: ${JSON.stringify(s).slice(0, 500)}`);
  return s.data as T;
};

void test("every section completes and every byte is verified; the run exits 0", () => {
  assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
  assert.equal(r.ok, true);
  assert.equal(r.meta.quick, true);
  assert.deepEqual(r.integrity.failures, []);
  assert.ok(r.integrity.verifiedChunks > 100, `only ${r.integrity.verifiedChunks} chunks verified`);
  // A section is skipped only for what this machine lacks, and says so.
  const lacking: Record<string, string | null> = {
    twoNode: hasRedisServer() ? null : "redis-server is not on PATH",
    links: linksUnavailable(),
  };
  for (const [id, s] of Object.entries(r.sections)) {
    const lacks = lacking[id];
    if (lacks) {
      assert.equal(s?.status, "skipped");
      assert.ok(s?.status === "skipped" && s.reason.includes(lacks), JSON.stringify(s));
      continue;
    }
    assert.equal(s?.status, "done", `section ${id}: ${JSON.stringify(s).slice(0, 500)}`);
  }
});

void test("every goal is judged from data, but for the cases the quick plan has none of", () => {
  const unmeasured = r.goals.filter((g) => g.status === "not measured");
  for (const g of unmeasured) {
    assert.match(g.why ?? "", /plan has no [^.]*case|skipped/, `${g.id} not measured: ${g.why}`);
  }
  assert.ok(r.goals.some((g) => g.status !== "not measured"));
  if (unmeasured.length > 0) assert.equal(r.verdict.status, "PARTIAL");
  else assert.ok(["PASS", "MISSED"].includes(r.verdict.status), r.verdict.status);
  assert.match(run.stdout, new RegExp(`^bench: ${r.verdict.status} \\(.*quick run: `, "m"));
});

void test("the report is complete: Markdown, JSON, an SVG per chart, the HTML page", () => {
  for (const f of [
    "report.md",
    "report.json",
    "index.html",
    "sweep-base64.svg",
    "sweep-binary.svg",
    "ratio-base64.svg",
    "direct.svg",
    "micro.svg",
    "many-agents.svg",
    "user-view.svg",
  ]) {
    assert.ok(existsSync(join(out, f)), `${f} written`);
  }
  const md = readFileSync(join(out, "report.md"), "utf8");
  assert.match(md, /## Goals/);
  assert.match(md, /## Two Server nodes over Redis/);
  // The codecs section's table and its pick per link rate (D64).
  assert.match(md, /## Content-codings: ratio and CPU per MB on the text corpus/);
  assert.match(md, /\| br-5 +\| \d+\.\d\d \/ \d+\.\d\d/);
  assert.match(md, /\| 200 Mbit\/s \|.*\| (br|gzip)-\d \| (br|gzip)-\d \|/);
  // The arguments, without the output folder (a machine path).
  assert.deepEqual(r.meta.argv, ["--quick"]);
  // Nothing of this machine's paths: the report is meant to be committed and shared.
  for (const f of ["report.json", "report.md", "index.html"]) {
    const text = readFileSync(join(out, f), "utf8");
    for (const path of [out, REPO_ROOT, REPO_ROOT.replace(/\/$/, ""), tmpdir()])
      assert.ok(!text.includes(path), `${f} mentions ${path}`);
  }
});

void test("every sweep point is paired, repetition by repetition, with a bare-relay point", () => {
  const points = data<SweepData>("sweep").buffers.flatMap((b) => b.points);
  assert.ok(points.some((p) => p.carriage === "binary"));
  const reps = r.meta.plan.pointReps;
  assert.ok(reps >= 2);
  for (const p of points) {
    assert.ok(p.ceilingMbps !== null && p.ceilingMbps > 0, `no ceiling for ${JSON.stringify(p)}`);
    assert.equal(p.spread.reps.length, reps);
    assert.equal(p.bare.reps.length, reps);
    assert.deepEqual(
      p.pairRatios.reps,
      p.spread.reps.map((x, i) => x / p.bare.reps[i]!),
    );
    assert.equal(p.ratio, median(p.pairRatios.reps));
    assert.equal(p.mbps, median(p.spread.reps));
    assert.equal(p.ceilingMbps, median(p.bare.reps));
    assert.ok(p.spread.min <= p.mbps && p.mbps <= p.spread.max);
  }
  // The capacity model ran from measured reads.
  assert.ok(r.sections.capacity?.status === "done");
});

void test("rewrites deliver no corrupt byte; many Agents keep every round", () => {
  const rows = data<{ rows: Array<{ corrupt: number; chunksDisagreeing: number }> }>("rewrites");
  assert.ok(rows.rows.length > 0);
  for (const row of rows.rows) {
    assert.equal(row.corrupt, 0);
    assert.equal(row.chunksDisagreeing, 0);
  }
  const many = data<{ rows: Array<{ aggregate: { reps: number[] } }> }>("manyAgents");
  for (const row of many.rows) assert.equal(row.aggregate.reps.length, r.meta.plan.manyAgentsReps);
});

void test("the user view names the carriage each row used", () => {
  const rows = data<UserViewData>("userView").rows;
  assert.deepEqual(Object.fromEntries(rows.map((x) => [x.id, x.carriage])), {
    "cli-binary": "binary",
    "sdk-binary": "binary",
    "cli-base64": "base64",
    "sdk-base64": "base64",
    "bare-binary": "binary",
    "bare-base64": "base64",
    http: "http",
  });
});

void test(
  "two Server nodes over Redis: one node, one Redis node and across nodes measured",
  {
    skip: hasRedisServer() ? false : "redis-server is not on PATH",
  },
  () => {
    const d = data<TwoNodeData>("twoNode");
    for (const placement of ["memory", "redisOne", "cross"]) {
      const p = d.points.find((x) => x.placement === placement && x.agents === 1);
      assert.ok(p && p.medianMbps > 0, `${placement} measured`);
      assert.ok(p.p99Ms >= p.p50Ms && p.p50Ms > 0);
      assert.ok(p.cpu.redis !== undefined, "redis-server CPU sampled");
    }
    assert.ok(d.ratios.some((x) => x.carriage === "base64" && Number.isFinite(x.crossVsOne)));
    assert.ok(r.integrity.verifiedResources >= d.points.length * d.rounds);
  },
);

void test("index.html renders in headless Chromium, every chart inline and readable", async () => {
  const html = readFileSync(join(out, "index.html"), "utf8");
  for (const id of ["sweep-base64", "ratio-binary", "direct", "micro"])
    assert.match(html, new RegExp(`<figure class="chart" id="chart-${id}"[^>]*><svg`), id);
  const page = await openReport(out);
  try {
    assert.match(await page.page.title(), /benchmark/i);
    assert.ok(page.charts.length >= 8, `${page.charts.length} charts`);
    for (const c of page.charts) assert.deepEqual(chartProblems(c), [], c.id);
    assert.ok((await page.page.$$("table")).length >= 3);
    assert.match(await page.page.innerText(".verdict"), new RegExp(`^${r.verdict.status}`));
    const shot = join(out, "screenshot.png");
    await page.page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 10_000, "screenshot written");
    assert.deepEqual(page.problems, []);
  } finally {
    await page.close();
  }
});
