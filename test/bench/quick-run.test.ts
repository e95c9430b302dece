// `npm run bench -- --quick`, as CI runs it: every section completes, every byte is verified, the
// report (Markdown, JSON, SVG charts, HTML page) is written, and the run exits 0. Speed is not
// asserted; correctness is.
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
      const run = await runBench(["--quick", "--out", out]);
      assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
      const r = run.report;
      assert.equal(r.ok, true);
      assert.equal(r.meta.quick, true);
      assert.deepEqual(r.integrity.failures, []);
      assert.ok(
        r.integrity.verifiedChunks > 100,
        `only ${r.integrity.verifiedChunks} chunks verified`,
      );
      const ids = [
        "micro",
        "ceiling",
        "sweep",
        "direct",
        "manyAgents",
        "rewrites",
        "computerCost",
        "http",
        "capacity",
      ] as const;
      for (const id of ids) {
        const s = r.sections[id];
        assert.equal(s?.status, "done", `section ${id}: ${JSON.stringify(s).slice(0, 500)}`);
      }
      // Every goal is judged from data (met or missed), none left unmeasured in a full stack.
      assert.equal(r.goals.length, 5);
      for (const g of r.goals)
        assert.notEqual(g.status, "not measured", `${g.text}: ${g.why ?? ""}`);
      // Rewrites: zero corrupt deliveries and zero chunks disagreeing with their sha256.
      const rw = r.sections.rewrites;
      assert.ok(rw?.status === "done");
      for (const row of (
        rw.data as {
          rows: Array<{ corrupt: number; chunksDisagreeing: number; deliveries: number }>;
        }
      ).rows) {
        assert.equal(row.corrupt, 0);
        assert.equal(row.chunksDisagreeing, 0);
      }
      for (const f of [
        "report.md",
        "index.html",
        "sweep-base64.svg",
        "sweep-binary.svg",
        "ratio-base64.svg",
        "direct.svg",
        "micro.svg",
        "many-agents.svg",
      ]) {
        assert.ok(existsSync(join(out, f)), `${f} written`);
      }
      const html = readFileSync(join(out, "index.html"), "utf8");
      for (const m of html.matchAll(/<img src="([^"]+)"/g))
        assert.ok(existsSync(join(out, m[1]!)), `${m[1]} exists`);
      const md = readFileSync(join(out, "report.md"), "utf8");
      assert.match(md, /## Goals/);
      assert.match(md, /Result: PASS/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
