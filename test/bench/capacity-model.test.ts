// @pure
// The capacity model derives every Server figure from one measurement: section twoNode's warm
// in-memory and cross-node pulls when it ran (so its MB/s per core agrees with the two-node
// table for both carriages), else the sweep's SDK-default reads; it states the network, Redis and
// placement limits, and refuses to run with neither source.
import { test } from "node:test";
import assert from "node:assert/strict";
import { IntegrityLedger } from "../../bench/lib/integrity.ts";
import { makePlan } from "../../bench/lib/plan.ts";
import { SkipSection, type Ctx } from "../../bench/lib/context.ts";
import {
  NIC_GBPS,
  runCapacity,
  TARGET_UTILISATION,
  type CapacityData,
} from "../../bench/sections/capacity.ts";
import type { SweepData } from "../../bench/sections/sweep.ts";
import type { TwoNodeData } from "../../bench/sections/two-node.ts";
import { fixtureReport } from "./fixture-report.ts";

async function capacity(without: Array<"twoNode" | "sweep" | "manyAgents">): Promise<CapacityData> {
  const r = await fixtureReport();
  const results = { ...r.sections };
  delete results.capacity;
  for (const id of without) delete results[id];
  const ctx: Ctx = {
    plan: makePlan(false),
    ledger: new IntegrityLedger(),
    dataDir: "",
    results,
    log: () => {},
  };
  return runCapacity(ctx);
}

async function sections(): Promise<{ two: TwoNodeData; sweep: SweepData }> {
  const r = await fixtureReport();
  return {
    two: (r.sections.twoNode as { data: TwoNodeData }).data,
    sweep: (r.sections.sweep as { data: SweepData }).data,
  };
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, b);

void test("with section twoNode, every Server figure comes from its pulls", async () => {
  const d = await capacity([]);
  const { two } = await sections();
  const at = (placement: string, carriage: string) =>
    two.points.find((p) => p.placement === placement && p.carriage === carriage && p.agents === 1)!;
  assert.equal(d.source.section, "twoNode");
  for (const carriage of ["base64", "binary"] as const) {
    const cost = d.serverCost[carriage]!;
    assert.equal(cost.msPerMb, at("memory", carriage).serverCpuMsPerMb);
    assert.ok(close(cost.perCoreMbps, 1000 / at("memory", carriage).serverCpuMsPerMb), carriage);
    assert.equal(cost.demandMbps, at("memory", carriage).medianMbps);
  }
  assert.equal(d.perCoreBinaryMbps, d.serverCost.binary!.perCoreMbps);
  const x = d.crossNode!;
  assert.ok(close(x.perCoreCrossMbps, 1000 / at("cross", "base64").serverCpuMsPerMb));
  assert.ok(
    close(x.redisCoreMbps!, (TARGET_UTILISATION * 1000) / at("cross", "base64").redisCpuMsPerMb!),
  );
  for (const row of d.rows) {
    assert.ok(close(row.serverCores, row.totalMbps / d.perCoreMbps));
    const node = d.nodeCapacity.find((n) => n.carriage === "base64" && n.cores === 8)!;
    assert.equal(
      row.nodes["8"],
      Math.ceil(row.totalMbps / Math.min(node.cpuMbps, node.networkMbps)),
    );
  }
  // Binary on an 8-core node outruns a 10 Gbit/s network: the model says which limit binds.
  const bin8 = d.nodeCapacity.find((n) => n.carriage === "binary" && n.cores === 8)!;
  assert.equal(bin8.limit, "network");
  assert.equal(bin8.mbps, NIC_GBPS * 125);
  const text = d.assumptions.join(" ");
  for (const words of [/Gbit\/s/, /one core/, /shard/, /one Server node/, /at once/])
    assert.match(text, words);
});

void test("without section twoNode, the sweep's SDK-default reads are the one source", async () => {
  const d = await capacity(["twoNode"]);
  const { sweep } = await sections();
  const sdk = sweep.sdk.find((r) => r.carriage === "binary")!;
  assert.equal(d.source.section, "sweep");
  assert.ok(close(d.perCoreBinaryMbps!, 1000 / sdk.serverCpuMsPerMb.median));
  assert.equal(d.perAgentDemandMbps, sweep.sdk.find((r) => r.carriage === "base64")!.medianMbps);
  assert.equal(d.crossNode, null);
  assert.ok(d.rows.every((r) => r.redisCores === null && r.processesCross === null));
  assert.match(d.assumptions.join(" "), /twoNode, which did not run/);
});

void test("with neither twoNode nor the sweep, the model is skipped, not guessed", async () => {
  await assert.rejects(capacity(["twoNode", "sweep"]), SkipSection);
});
