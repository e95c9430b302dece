// `npm run bench -- --quick --only twoNode`: the two-node point of the scale-out over Redis (one in-memory node,
// one Redis node, Agent and Computer on two nodes over Redis) runs in its tiny form, every read is
// verified, and the report carries the table and the cross/one-node ratios. Without redis-server
// on PATH the section must be skipped with a clear note instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasRedisServer } from "../../bench/lib/redis.ts";
import type { TwoNodeData } from "../../bench/sections/two-node.ts";
import { runBench } from "../support/bench-run.ts";

void test(
  "the quick twoNode section measures one node vs two nodes",
  { timeout: 600_000 },
  async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-quick-two-node-"));
    try {
      const run = await runBench(["--quick", "--only", "twoNode", "--out", out]);
      assert.equal(run.code, 0, `bench exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
      const r = run.report;
      assert.equal(r.ok, true);
      assert.deepEqual(r.integrity.failures, []);
      const s = r.sections.twoNode;
      const md = readFileSync(join(out, "report.md"), "utf8");
      assert.match(md, /## Two Server nodes over Redis/);
      if (!hasRedisServer()) {
        assert.equal(s?.status, "skipped");
        assert.match(s.status === "skipped" ? s.reason : "", /redis-server is not on PATH/);
        return;
      }
      assert.equal(s?.status, "done", JSON.stringify(s).slice(0, 500));
      const d = (s as { data: TwoNodeData }).data;
      for (const placement of ["memory", "redisOne", "cross"]) {
        const p = d.points.find((x) => x.placement === placement && x.agents === 1);
        assert.ok(p && p.medianMbps > 0, `${placement} measured`);
        assert.ok(p.p99Ms >= p.p50Ms && p.p50Ms > 0);
        assert.ok(p.cpu.redis !== undefined, "redis-server CPU sampled");
      }
      assert.ok(d.ratios.some((x) => x.carriage === "base64" && Number.isFinite(x.crossVsOne)));
      assert.ok(r.integrity.verifiedResources >= d.points.length * d.rounds);
      assert.match(md, /cross \/ one node/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
