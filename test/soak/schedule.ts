/**
 * The soak's timetable, shared by the orchestrator (test/soak/main.ts) and every Agent process:
 * after a warm-up, the run alternates quiet and loaded phases (cycles), so the probe's unloaded
 * baseline is measured in the same conditions as its loaded figure (same machine load from other
 * users, same heap age), not only in the first minutes of the run.
 */
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

export interface Phase {
  from: number;
  to: number;
  loaded: boolean;
}
export interface Schedule {
  start: number;
  end: number;
  phases: Phase[];
}

/**
 * Cycles of `cycleMs` (one third quiet, then loaded) from `start` for `durationMs`, ending with a
 * quiet phase (the end-of-run descriptor count is taken with no load in flight).
 */
export function makeSchedule(start: number, durationMs: number, warmupMs = 5_000): Schedule {
  const cycleMs = Math.min(60_000, Math.max(30_000, Math.round(durationMs / 6)));
  const quietMs = Math.round(cycleMs / 3);
  const end = start + durationMs;
  const cycles = Math.max(1, Math.floor((durationMs - warmupMs - quietMs) / cycleMs));
  const phases: Phase[] = [{ from: start, to: start + warmupMs, loaded: false }];
  let t = start + warmupMs;
  for (let k = 0; k < cycles; k++, t += cycleMs) {
    phases.push({ from: t, to: t + quietMs, loaded: false });
    phases.push({ from: t + quietMs, to: t + cycleMs, loaded: true });
  }
  phases.push({ from: t, to: Math.max(end, t + quietMs), loaded: false });
  return { start, end: Math.max(end, t + quietMs), phases };
}

export function phaseAt(s: Schedule, t: number): Phase | undefined {
  return s.phases.find((p) => t >= p.from && t < p.to);
}

/** Waits (polling, 100 ms) until the orchestrator writes the schedule file. */
export async function awaitSchedule(path: string): Promise<Schedule> {
  while (!existsSync(path)) await sleep(100);
  return JSON.parse(readFileSync(path, "utf8")) as Schedule;
}

/**
 * Resolves when a loaded phase is on (true), or false once the run is over. Loaders start new
 * work only while it returns true; work in flight at a phase's end runs to completion and is
 * recorded as activity, so the analysis can exclude the quiet samples it overlapped.
 */
export async function untilLoaded(s: Schedule): Promise<boolean> {
  for (;;) {
    const t = Date.now();
    if (t >= s.end) return false;
    const p = phaseAt(s, t);
    if (p?.loaded) return true;
    const next = s.phases.find((q) => q.loaded && q.from > t);
    if (!next) return false;
    await sleep(next.from - t);
  }
}
