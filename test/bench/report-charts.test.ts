// The HTML report of a full run (fixture-report.ts: the figures of a real full run, every point
// repeated) rendered in headless Chromium: the page is one self-contained file (no request leaves
// it), every chart of the run is on it, no two tick labels of a chart overlap, chunk-size axes
// carry byte labels, and every chart of two or more series has a legend naming each of them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBlocks } from "../../bench/report/build.ts";
import { writeReport } from "../../bench/report/write.ts";
import { chartProblems, openReport } from "../support/report-page.ts";
import { fixtureReport } from "./fixture-report.ts";

/** In page order: the summary's two key charts first, then the sections' charts. */
const CHARTS = [
  "user-view",
  "many-agents",
  "micro",
  "sweep-base64",
  "ratio-base64",
  "sweep-binary",
  "ratio-binary",
  "direct",
  "two-node",
];

void test(
  "every chart of a full report is on the page, readable, with a legend for its series",
  { timeout: 120_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-charts-"));
    try {
      const report = await fixtureReport();
      await writeReport(out, report, buildBlocks(report));
      for (const id of CHARTS) assert.ok(existsSync(join(out, `${id}.svg`)), `${id}.svg written`);
      const page = await openReport(out);
      try {
        assert.deepEqual(
          page.charts.map((c) => c.id),
          CHARTS,
        );
        for (const c of page.charts) assert.deepEqual(chartProblems(c), [], c.id);
        // Chunk sizes read as bytes, on a log axis from 16 KiB up.
        const sweep = page.charts.find((c) => c.id === "sweep-base64")!;
        const labels = sweep.axes.flat().map((b) => b.text);
        for (const l of ["16 KiB", "64 KiB", "256 KiB", "1 MiB"]) assert.ok(labels.includes(l), l);
        // The sweep names both sides; many Agents keeps MB/s and CPU on axes of their own.
        assert.deepEqual(sweep.legend.map((l) => l.text).sort(), [
          "bare socket.io relay (same point, measured next to it)",
          "our stack",
        ]);
        const html = readFileSync(join(out, "index.html"), "utf8");
        assert.match(html, /aggregate MB\/s/);
        assert.match(html, /Server CPU, % of one core/);
        assert.match(html, /id="capacity-model-and-recommended-settings"/);
        assert.ok(!html.includes("<img"), "charts are inline, the page needs no other file");
        assert.deepEqual(page.problems, []);
      } finally {
        await page.close();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
