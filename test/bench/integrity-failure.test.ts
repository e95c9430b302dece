// A wrong byte fails the run loudly: the bare Computer flips one byte of one chunk
// (A2C_BENCH_CORRUPT=1), and the bench still writes its report, names the failure, and exits 1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runBench } from "../support/bench-run.ts";

void test(
  "one corrupted chunk makes the bench exit non-zero with an integrity failure",
  { timeout: 300_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-corrupt-"));
    try {
      const run = await runBench(["--quick", "--only", "ceiling", "--out", out], {
        A2C_BENCH_CORRUPT: "1",
      });
      assert.equal(run.code, 1);
      assert.match(run.stderr, /INTEGRITY FAILURE/);
      assert.match(run.stdout, /bench: FAIL/);
      assert.equal(run.report.ok, false);
      assert.equal(run.report.integrity.failures.length, 1);
      assert.match(run.report.integrity.failures[0]!, /sha256 of its bytes does not match/);
      const ceiling = run.report.sections.ceiling;
      assert.ok(ceiling?.status === "failed" && ceiling.integrity);
      assert.match(readFileSync(join(out, "report.md"), "utf8"), /INTEGRITY FAILURES/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
