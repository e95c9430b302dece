/**
 * Runs one data point while taking CPU/RSS snapshots of every process involved, and rounds of
 * cases measured side by side.
 */
import { costBetween, type Child, type ProcCost } from "./ipc.ts";
import type { DriveResult } from "./driver.ts";
import type { IntegrityLedger } from "./integrity.ts";
import { median, spreadOf, type Spread } from "./stats.ts";

export interface PointResult {
  carriage: "base64" | "binary";
  chunkBytes: number;
  window: number;
  mbps: number;
  chunks: number;
  bytes: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU % of one core and RSS of each process over this point. */
  costs: ProcCost[];
}

export async function withCosts<T>(
  procs: ReadonlyArray<{ role: string; child: Child }>,
  fn: () => Promise<T>,
): Promise<{ value: T; costs: ProcCost[] }> {
  const before = await Promise.all(procs.map((p) => p.child.stats()));
  const value = await fn();
  const after = await Promise.all(procs.map((p) => p.child.stats()));
  const costs = procs.map((p, i) => costBetween(p.role, before[i]!, after[i]!));
  return { value, costs };
}

/** Turns a verified drive into a report point and books its bytes as verified. */
export function toPoint(
  ledger: IntegrityLedger,
  key: { carriage: "base64" | "binary"; chunkBytes: number; window: number },
  r: DriveResult,
  costs: ProcCost[],
): PointResult {
  ledger.add(r.chunks, r.bytes);
  return {
    ...key,
    mbps: r.mbps,
    chunks: r.chunks,
    bytes: r.bytes,
    seconds: r.seconds,
    p50Ms: r.latencyMs.p50,
    p99Ms: r.latencyMs.p99,
    costs,
  };
}

/** A point measured several times: totals over every repetition, medians where they count. */
export interface RepeatedPoint extends PointResult {
  /** MB/s of every repetition, in order; `mbps` is their median. */
  spread: Spread;
}

/**
 * Folds the repetitions of one point: chunks, bytes and seconds summed (all were verified), MB/s
 * the median, latency from the repetition whose MB/s is the median, CPU % the median per process.
 */
export function combineReps(reps: readonly PointResult[]): RepeatedPoint {
  const first = reps[0];
  if (!first) throw new Error("combineReps needs at least one repetition");
  const spread = spreadOf(reps.map((r) => r.mbps));
  const mid = [...reps].sort((a, b) => a.mbps - b.mbps)[Math.floor((reps.length - 1) / 2)] ?? first;
  return {
    carriage: first.carriage,
    chunkBytes: first.chunkBytes,
    window: first.window,
    mbps: spread.median,
    chunks: reps.reduce((a, r) => a + r.chunks, 0),
    bytes: reps.reduce((a, r) => a + r.bytes, 0),
    seconds: reps.reduce((a, r) => a + r.seconds, 0),
    p50Ms: mid.p50Ms,
    p99Ms: mid.p99Ms,
    costs: medianCosts(reps.map((r) => r.costs)),
    spread,
  };
}

/** Per process, the median CPU % and the last RSS over several measurements. */
export function medianCosts(all: readonly ProcCost[][]): ProcCost[] {
  const names = [...new Set(all.flatMap((c) => c.map((x) => x.name)))];
  return names.map((name) => {
    const xs = all.flatMap((c) => c.filter((x) => x.name === name));
    return {
      name,
      cpuPercent: median(xs.map((x) => x.cpuPercent)),
      rssBytes: xs[xs.length - 1]?.rssBytes ?? 0,
    };
  });
}

/**
 * Runs every case once per round, the order rotating by one each round so that every case
 * meets the machine in every position; returns each case's samples in round order.
 */
export async function rotatingRounds<Id extends string, S>(
  rounds: number,
  cases: ReadonlyArray<{ id: Id }>,
  run: (index: number, round: number) => Promise<S>,
  hooks: {
    beforeRound?: (round: number) => Promise<void>;
    onSample?: (id: Id, sample: S, round: number) => void;
  } = {},
): Promise<Map<Id, S[]>> {
  const samples = new Map<Id, S[]>(cases.map((c) => [c.id, []]));
  for (let round = 0; round < rounds; round++) {
    await hooks.beforeRound?.(round);
    for (let k = 0; k < cases.length; k++) {
      const i = (k + round) % cases.length;
      const sample = await run(i, round);
      samples.get(cases[i]!.id)!.push(sample);
      hooks.onSample?.(cases[i]!.id, sample, round);
    }
  }
  return samples;
}
