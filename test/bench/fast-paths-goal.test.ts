// @pure
// The fast-paths goal (D102) judges each transport departure where it was made for, and at
// the SDK's defaults only where its transport lets it act: a departure that does not act at a
// default case runs stock code there, and its ratio (what two identical processes differ by) is
// shown, not judged. One that acts at a default and costs its role CPU there misses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { evaluateGoals } from "../../bench/goals.ts";
import {
  transportConfigs,
  type TransportData,
  type TransportPoint,
} from "../../bench/sections/transport.ts";
import { KiB } from "../../bench/lib/stats.ts";
import type { Report } from "../../bench/report/types.ts";
import { fixtureReport } from "./fixture-report.ts";

const CASES = [
  { carriage: "binary", chunkBytes: 512 * KiB },
  { carriage: "base64", chunkBytes: 64 * KiB },
  { carriage: "binary", chunkBytes: 16 * KiB },
] as const;

/** Every configuration at every case with the given CPU ratios (1 unless named). */
function transportData(cpu: Record<string, number> = {}): TransportData {
  const points: TransportPoint[] = transportConfigs().flatMap((c) =>
    CASES.map((k) => {
      const ratio = cpu[`${c.id} @ ${k.carriage} ${k.chunkBytes / KiB}`] ?? 1;
      return {
        config: c.id,
        carriage: k.carriage,
        chunkBytes: k.chunkBytes,
        perRoundMbps: [100],
        medianMbps: 100,
        serverCpuMsPerMb: ratio,
        computerCpuMsPerMb: ratio,
        mbpsVsDefault: 1 / ratio,
        serverCpuVsDefault: ratio,
        computerCpuVsDefault: ratio,
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
    configs: transportConfigs(),
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
  "without raw_acks @ base64 64": 1.5,
  "without batch_writes @ binary 16": 1.1,
  "without computer mask_in_place @ binary 512": 1.4,
  "without computer batch_writes @ binary 16": 1.1,
};

void test("met when each pays where made for; a departure idle at a default is not judged there", async () => {
  // batch_writes does not act at 512 KiB: its 0.7 there is two processes' difference.
  const g = await goalWith(transportData({ ...PAYING, "without batch_writes @ binary 512": 0.7 }));
  assert.equal(g.status, "met", g.measured);
  assert.match(g.measured, /not acting at the defaults .*batch_writes at binary 512 KiB ×0\.70/);
});

void test("missed when one that acts at a default costs its role CPU there", async () => {
  // raw_acks acts at the base64 default, which is also where it was made for.
  const low = await goalWith(transportData({ ...PAYING, "without raw_acks @ base64 64": 0.9 }));
  assert.equal(low.status, "missed");
  assert.match(low.why ?? "", /raw_acks at the default base64 64 KiB/);
});

void test("missed when one no longer pays where it was made for", async () => {
  const g = await goalWith(
    transportData({ ...PAYING, "without computer batch_writes @ binary 16": 1 }),
  );
  assert.equal(g.status, "missed");
  assert.match(g.why ?? "", /computer batch_writes at binary 16 KiB/);
});
