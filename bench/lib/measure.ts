/** Runs one data point while taking CPU/RSS snapshots of every process involved. */
import { costBetween, type Child, type ProcCost } from "./ipc.ts";
import type { DriveResult } from "./driver.ts";
import type { IntegrityLedger } from "./integrity.ts";

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
