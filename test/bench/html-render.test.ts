// The report of a real (small, partial) bench run: micro and the direct HTTP baseline. Its HTML
// page renders in headless Chromium without console errors, page errors or requests leaving the
// page; every chart is inline with readable, non-overlapping tick labels and a legend for its
// series; the run says it is partial instead of passing; and nothing of this machine's paths is in
// report.json, report.md or index.html.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runBench } from "../support/bench-run.ts";
import { chartProblems, openReport } from "../support/report-page.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

void test(
  "a partial run's index.html renders in headless Chromium, every chart readable",
  { timeout: 300_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-html-"));
    try {
      const run = await runBench(["--quick", "--only", "micro,direct", "--out", out]);
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      assert.match(run.stdout, /^bench: PARTIAL \(0 of 18 goals measured; not measured: /m);
      assert.doesNotMatch(run.stdout, /^bench: PASS/m);
      assert.equal(run.report.verdict.status, "PARTIAL");
      for (const f of ["report.json", "report.md", "index.html"]) {
        const text = readFileSync(join(out, f), "utf8");
        for (const path of [out, root, root.replace(/\/$/, ""), tmpdir()])
          assert.ok(!text.includes(path), `${f} mentions ${path}`);
      }
      assert.deepEqual(run.report.meta.argv, ["--quick", "--only", "micro,direct"]);
      const page = await openReport(out);
      try {
        assert.match(await page.page.title(), /benchmark/i);
        assert.deepEqual(
          page.charts.map((c) => c.id),
          ["micro", "direct"],
        );
        for (const c of page.charts) assert.deepEqual(chartProblems(c), [], c.id);
        assert.ok((await page.page.$$("table")).length >= 3);
        assert.match(await page.page.innerText(".verdict"), /^PARTIAL/);
        const shot = join(out, "screenshot.png");
        await page.page.screenshot({ path: shot, fullPage: true });
        assert.ok(statSync(shot).size > 10_000, "screenshot written");
        assert.deepEqual(page.problems, []);
      } finally {
        await page.close();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
