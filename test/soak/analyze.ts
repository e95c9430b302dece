/**
 * Soak analysis: the probe's chunk latency quiet vs loaded (from interleaved phases), where its
 * latency goes hop by hop (test/soak/trace.ts timestamps), and each process's event-loop delay,
 * CPU and run-queue wait per phase.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { phaseAt, type Schedule } from "./schedule.ts";

export function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}
export const median = (xs: number[]): number => pct(xs, 0.5);
const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / Math.max(1, xs.length);

/** Sorted, merged activity intervals; `overlaps` is a binary search. */
export class Activity {
  private readonly iv: [number, number][] = [];
  constructor(intervals: [number, number][]) {
    for (const [f, t] of [...intervals].sort((x, y) => x[0] - y[0])) {
      const last = this.iv.at(-1);
      if (last && f <= last[1]) last[1] = Math.max(last[1], t);
      else this.iv.push([f, t]);
    }
  }
  overlaps(from: number, to: number): boolean {
    let lo = 0;
    let hi = this.iv.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.iv[mid]![1] < from) lo = mid + 1;
      else hi = mid;
    }
    const c = this.iv[lo];
    return c !== undefined && c[0] <= to;
  }
}

export type Cls = "quiet" | "loaded" | "skip";
/** quiet = a quiet phase with no load activity overlapping [from, to]; loaded = a loaded phase. */
export function classify(s: Schedule, act: Activity, from: number, to: number): Cls {
  const p = phaseAt(s, from);
  if (!p || p === s.phases[0]) return "skip"; // outside the run, or warm-up
  if (p.loaded) return "loaded";
  return act.overlaps(from, to) ? "skip" : "quiet";
}

export interface LatencyResult {
  quiet_p99: number;
  loaded_p99: number;
  quiet_p50: number;
  loaded_p50: number;
  ratio: number;
  samples: { quiet: number; loaded: number; skipped: number };
  /** p99 loaded / p99 quiet of each cycle (a quiet phase and the loaded phase after it). */
  cycle_ratios: number[];
}

export function latency(s: Schedule, act: Activity, lat: [number, number][]): LatencyResult {
  const q: number[] = [];
  const l: number[] = [];
  let skipped = 0;
  const perCycle = new Map<number, { q: number[]; l: number[] }>();
  for (const [wall, ms] of lat) {
    const c = classify(s, act, wall, wall + ms);
    if (c === "skip") {
      skipped++;
      continue;
    }
    (c === "quiet" ? q : l).push(ms);
    const idx = s.phases.findIndex((p) => wall >= p.from && wall < p.to);
    const cycle = c === "quiet" ? idx : idx - 1;
    let e = perCycle.get(cycle);
    if (!e) perCycle.set(cycle, (e = { q: [], l: [] }));
    (c === "quiet" ? e.q : e.l).push(ms);
  }
  const cycle_ratios = [...perCycle.values()]
    .filter((e) => e.q.length >= 100 && e.l.length >= 100)
    .map((e) => pct(e.l, 0.99) / pct(e.q, 0.99));
  return {
    quiet_p99: pct(q, 0.99),
    loaded_p99: pct(l, 0.99),
    quiet_p50: median(q),
    loaded_p50: median(l),
    ratio: pct(l, 0.99) / pct(q, 0.99),
    samples: { quiet: q.length, loaded: l.length, skipped },
    cycle_ratios,
  };
}

interface TraceLine {
  t?: number;
  eld_p99?: number;
  eld_max?: number;
  cpu_ms?: number;
  wait_ms?: number;
  gc_ms?: number;
  gc_max?: number;
  handles?: number;
  req?: string;
  [hop: string]: number | string | undefined;
}
export interface TraceFiles {
  /** role → per-second samples */
  procs: Map<string, TraceLine[]>;
  /** req_id → hop → wall ms (merged across processes) */
  hops: Map<string, Record<string, number>>;
}

export function readTraces(dir: string): TraceFiles {
  const procs = new Map<string, TraceLine[]>();
  const hops = new Map<string, Record<string, number>>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith(".jsonl"))) {
    const role = f.replace(/-\d+\.jsonl$/, "");
    for (const line of readFileSync(join(dir, f), "utf8").split("\n")) {
      if (!line) continue;
      const o = JSON.parse(line) as TraceLine;
      if (o.req === undefined) {
        if (!procs.has(role)) procs.set(role, []);
        procs.get(role)!.push(o);
      } else {
        const h = hops.get(o.req) ?? {};
        for (const [k, v] of Object.entries(o)) if (typeof v === "number") h[k] = v;
        hops.set(o.req, h);
      }
    }
  }
  return { procs, hops };
}

/** Hop segments of one probe request, in path order. */
export const SEGMENTS: [string, string, string][] = [
  ["agent→server", "a_send", "s_in"],
  ["server route", "s_in", "s_fwd"],
  ["server→computer", "s_fwd", "c_in"],
  ["computer", "c_in", "c_out"],
  ["computer→server", "c_out", "s_ack"],
  ["server ack", "s_ack", "s_out"],
  ["server→agent", "s_out", "a_recv"],
];

export interface HopRow {
  segment: string;
  quiet_p50: number;
  loaded_p50: number;
  /** Mean of the segment over the slowest 1% of requests (by end to end) of the phase. */
  quiet_tail: number;
  loaded_tail: number;
}

export function hopTable(s: Schedule, act: Activity, t: TraceFiles): { rows: HopRow[]; n: number } {
  const by: Record<"quiet" | "loaded", Record<string, number>[]> = { quiet: [], loaded: [] };
  for (const h of t.hops.values()) {
    if (!SEGMENTS.every(([, f, to]) => h[f] !== undefined && h[to] !== undefined)) continue;
    const c = classify(s, act, h.a_send!, h.a_recv!);
    if (c !== "skip") by[c].push(h);
  }
  const tail = (hs: Record<string, number>[]): Record<string, number>[] => {
    const e2e = (h: Record<string, number>): number => h.a_recv! - h.a_send!;
    const cut = pct(hs.map(e2e), 0.99);
    return hs.filter((h) => e2e(h) >= cut);
  };
  const seg = (hs: Record<string, number>[], f: string, to: string): number[] =>
    hs.map((h) => h[to]! - h[f]!);
  const qt = tail(by.quiet);
  const lt = tail(by.loaded);
  const rows = [...SEGMENTS, ["end to end", "a_send", "a_recv"] as [string, string, string]].map(
    ([segment, f, to]) => ({
      segment,
      quiet_p50: median(seg(by.quiet, f, to)),
      loaded_p50: median(seg(by.loaded, f, to)),
      quiet_tail: mean(seg(qt, f, to)),
      loaded_tail: mean(seg(lt, f, to)),
    }),
  );
  return { rows, n: by.quiet.length + by.loaded.length };
}

/** One process in one kind of phase: per-second figures over the phase's seconds. */
export interface PhaseLoad {
  eld_p99: number;
  cpu_pct: number;
  wait_pct: number;
  /** Time in GC pauses, % of wall time; longest single pause (ms). */
  gc_pct: number;
  gc_max: number;
}

export interface ProcRow {
  role: string;
  quiet: PhaseLoad;
  loaded: PhaseLoad;
  /** Active handles (median) in the first quiet phase after load and in the last quiet phase. */
  handles: { first: number; last: number };
}

/** Per process: median ELD p99 and mean CPU / run-queue wait (% of one core) per phase. */
export function procTable(s: Schedule, act: Activity, t: TraceFiles): ProcRow[] {
  const rows: ProcRow[] = [];
  for (const [role, lines] of [...t.procs].sort((x, y) => x[0].localeCompare(y[0]))) {
    const by: Record<"quiet" | "loaded", TraceLine[]> = { quiet: [], loaded: [] };
    const quietByPhase = new Map<number, number[]>();
    for (const l of lines) {
      const c = classify(s, act, l.t! - 1_000, l.t!);
      if (c !== "skip") by[c].push(l);
      const i = s.phases.findIndex((p) => l.t! - 1_000 >= p.from && l.t! - 1_000 < p.to);
      if (c === "quiet" && i >= 3 && l.handles !== undefined) {
        if (!quietByPhase.has(i)) quietByPhase.set(i, []);
        quietByPhase.get(i)!.push(l.handles);
      }
    }
    const phases = [...quietByPhase.keys()].sort((x, y) => x - y);
    const handles = {
      first: median(quietByPhase.get(phases[0]!) ?? []),
      last: median(quietByPhase.get(phases.at(-1)!) ?? []),
    };
    const sum = (ls: TraceLine[]): PhaseLoad => ({
      eld_p99: median(ls.map((l) => l.eld_p99!)),
      cpu_pct: mean(ls.map((l) => l.cpu_ms! / 10)),
      wait_pct: mean(ls.map((l) => l.wait_ms! / 10)),
      gc_pct: mean(ls.map((l) => (l.gc_ms ?? 0) / 10)),
      gc_max: Math.max(0, ...ls.map((l) => l.gc_max ?? 0)),
    });
    rows.push({ role, quiet: sum(by.quiet), loaded: sum(by.loaded), handles });
  }
  return rows;
}
