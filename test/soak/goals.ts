/**
 * What the soak judges (D72): what a user sees while others load the stack, and that
 * nothing grows. The probe's loaded p99 has an absolute bound; its quiet p99 and their ratio are
 * reported beside it, unjudged: the ratio moved with the quiet figure (a faster quiet path failed
 * a run whose loaded p99 was its best yet), which no user notices.
 */
import type { LatencyResult } from "./analyze.ts";

/**
 * The probe's p99 under load, ms: one small request (a 64 KiB chunk, or the SKILL.md read that
 * fits one) while other users pull, burst and stall. The smallest user action is two such
 * requests (get_skill, then its first chunk); at 25 ms each the stack takes at most half of the
 * 100 ms within which an answer still feels immediate, and leaves the other half to the network
 * legs a deployment adds to the soak's loopback.
 */
export const LOADED_P99_MAX_MS = 25;
/** Samples each phase needs before its p99 means anything. */
export const MIN_SAMPLES = 300;

/** The latency verdicts (empty when the goal is met). */
export function latencyVerdicts(lat: LatencyResult): string[] {
  const verdicts: string[] = [];
  if (lat.samples.quiet < MIN_SAMPLES || lat.samples.loaded < MIN_SAMPLES)
    verdicts.push(
      `too few probe samples (quiet ${lat.samples.quiet}, loaded ${lat.samples.loaded})`,
    );
  if (!(lat.loaded_p99 <= LOADED_P99_MAX_MS))
    verdicts.push(
      `probe p99 chunk latency under load ${lat.loaded_p99.toFixed(1)} ms (goal ≤ ${LOADED_P99_MAX_MS} ms; quiet ${lat.quiet_p99.toFixed(1)} ms)`,
    );
  return verdicts;
}

/** The goal as the report states it. */
export const LATENCY_GOAL = `probe p99 loaded ≤ ${LOADED_P99_MAX_MS} ms (quiet p99 and ratio reported, not judged), ≥ ${MIN_SAMPLES} samples each`;
