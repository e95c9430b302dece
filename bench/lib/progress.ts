/**
 * Figures from a download's progress marks ([ms since its start, bytes delivered], as the link
 * harness's Agent driver reports them): bytes at a moment, how long until a rate was reached,
 * bytes per round trip. Pure, for the links and paths sections.
 */

/**
 * The payload share of a full TCP frame on the harness's links: 1448 bytes (MSS with
 * timestamps) of 1514 on the wire, what a plain TCP flow at the link's rate carries at most.
 */
export const FULL_FRAME_PAYLOAD = 1448 / 1514;

/** Bytes delivered `ms` after a download's start, from its progress marks (linear between). */
export function bytesAt(progress: ReadonlyArray<[number, number]>, ms: number): number {
  let prev: [number, number] = [0, 0];
  for (const p of progress) {
    if (p[0] >= ms) {
      const span = p[0] - prev[0];
      return span > 0 ? prev[1] + ((p[1] - prev[1]) * (ms - prev[0])) / span : p[1];
    }
    prev = p;
  }
  return prev[1];
}

/**
 * Seconds from `fromMs` (after the download's start) until the rate held ≥ `bps`: the end of the
 * first 1 s window from which every 1 s window up to `untilMs` carried it (what was already on
 * its way when the rate changed does not count as having adapted); null when none did.
 */
export function secondsToRate(
  progress: ReadonlyArray<[number, number]>,
  fromMs: number,
  untilMs: number,
  bps: number,
): number | null {
  const carried = (t: number): boolean =>
    (bytesAt(progress, t + 1000) - bytesAt(progress, t)) * 8 >= bps;
  let held: number | null = null;
  // From the phase's end backwards: the earliest start after which no window fell short.
  for (let t = untilMs - 1000; t >= fromMs; t -= 100) {
    if (!carried(t)) break;
    held = t;
  }
  return held === null ? null : (held + 1000 - fromMs) / 1000;
}

/** Bytes per round trip from the first answer on, and the first round that reached `most`. */
export function rounds(
  progress: ReadonlyArray<[number, number]>,
  rttMs: number,
  most: number,
): { perRound: number[]; roundsToCeiling: number | null } {
  const first = progress.find((p) => p[1] > 0);
  const end = progress[progress.length - 1];
  if (!first || !end) return { perRound: [], roundsToCeiling: null };
  const perRound: number[] = [];
  // Round 1 starts just before the first answer's mark, so its bytes count in it.
  for (let t = first[0] - 1; t + rttMs <= end[0]; t += rttMs) {
    perRound.push(bytesAt(progress, t + rttMs) - bytesAt(progress, t));
  }
  const k = perRound.findIndex((b) => b >= 0.9 * most);
  return { perRound, roundsToCeiling: k < 0 ? null : k + 1 };
}

/** `rounds`' round that reached the ceiling, as the log and the goals print it. */
export function roundText(round: number | null): string {
  return round === null ? "never" : `round ${round}`;
}
