// `npm run bench -- --quick`, as CI runs it, transfer half (micro, ceiling, sweep, direct,
// capacity; the other half is quick-run-stack.test.ts, split so each file stays inside the test
// runner's per-file timeout): every section completes, every byte is verified, the report
// (Markdown, JSON, SVG charts, HTML page with the charts inline) is written, and the run exits 0
// saying it is partial (the Computer goals are the other half's). Speed is not asserted.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runBench } from "../support/bench-run.ts";

void test(
  "the quick bench run passes and writes a complete report",
  { timeout: 900_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-quick-"));
    try {
      const run = await runBench([
        "--quick",
        "--only",
        "micro,ceiling,sweep,direct,capacity",
        "--out",
        out,
      ]);
      assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
      const r = run.report;
      assert.equal(r.ok, true);
      assert.equal(r.meta.quick, true);
      assert.deepEqual(r.integrity.failures, []);
      assert.ok(
        r.integrity.verifiedChunks > 100,
        `only ${r.integrity.verifiedChunks} chunks verified`,
      );
      // The sections this half runs (the stack half is checked by quick-run-stack.test.ts).
      const ids = ["micro", "ceiling", "sweep", "direct", "capacity"] as const;
      for (const id of ids) {
        const s = r.sections[id];
        assert.equal(
          s?.status,
          "done",
          `section ${id}: ${String(JSON.stringify(s)).slice(0, 500)}`,
        );
      }
      // The transfer goals are judged from data (met or missed), not left unmeasured.
      for (const g of r.goals.slice(0, 3))
        assert.notEqual(g.status, "not measured", `${g.text}: ${g.why ?? ""}`);
      for (const f of [
        "report.md",
        "index.html",
        "sweep-base64.svg",
        "sweep-binary.svg",
        "ratio-base64.svg",
        "direct.svg",
        "micro.svg",
      ]) {
        assert.ok(existsSync(join(out, f)), `${f} written`);
      }
      const html = readFileSync(join(out, "index.html"), "utf8");
      for (const id of ["sweep-base64", "ratio-binary", "direct", "micro"])
        assert.match(html, new RegExp(`<figure class="chart" id="chart-${id}"[^>]*><svg`), id);
      const md = readFileSync(join(out, "report.md"), "utf8");
      assert.match(md, /## Goals/);
      assert.match(md, /\*\*Verdict: PARTIAL\*\* \(4 of 18 goals measured, /);
      assert.match(
        run.stdout,
        /^bench: PARTIAL \(4 of 18 goals measured, .*not measured: small-chunks-base64, small-chunks-binary, per-chunk, per-chunk-skill-md, eld, cli-file-binary, cli-file-base64, default-vs-spec/m,
      );
      // The capacity model ran from the sweep's SDK reads (no twoNode in this half).
      const cap = r.sections.capacity;
      assert.ok(cap?.status === "done");
      assert.equal((cap.data as { source: { section: string } }).source.section, "sweep");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
