/**
 * Warm-up of freshly started processes before their first measured point. A fresh Node process
 * runs its hot paths in the interpreter until V8 has optimized them: on this VM the first seconds
 * of 16 KiB chunks cost 3–5× the CPU per chunk of the steady state (measured 2026-12-03: the
 * stack's Computer 686 → 142–163 µs per chunk over six 1 s points, the bare relay's 448 → 111–120),
 * and our stack, having more code on the path, warms more slowly than the bare relay. Without
 * this, the first points of every fresh set of processes measured the JIT rather than the relay.
 *
 * The warm-up pulls with the same driver (verified like every point, booked in the ledger) at a
 * small and a big chunk size, so both the synchronous small-read path and the big-buffer path are
 * compiled; nothing of it is reported.
 */
import type { Ctx } from "./context.ts";
import type { DriveResult } from "./driver.ts";
import { KiB } from "./stats.ts";

export type WarmUpDrive = (
  chunkBytes: number,
  window: number,
  durationMs: number,
) => Promise<DriveResult>;

/** The small chunk size of the sweep and one past the glibc mmap threshold (128 KiB). */
export const WARM_UP_SIZES: readonly number[] = [16 * KiB, 512 * KiB];

/** Window of the warm-up pulls (enough requests in flight to keep every process busy). */
const WARM_UP_WINDOW = 8;

/**
 * Runs `drive` for `ctx.plan.warmUpMs` in all, split over `sizes` (each at most `maxBytes`, the
 * carriage's clamp at this buffer); returns the chunks pulled.
 */
export async function warmUp(
  ctx: Ctx,
  sizes: readonly number[],
  maxBytes: number,
  drive: WarmUpDrive,
): Promise<number> {
  const usable = [...new Set(sizes.map((s) => Math.min(s, maxBytes)))].filter((s) => s > 0);
  if (usable.length === 0 || ctx.plan.warmUpMs <= 0) return 0;
  const each = Math.max(1, Math.round(ctx.plan.warmUpMs / usable.length));
  let chunks = 0;
  for (const size of usable) {
    const r = await drive(size, WARM_UP_WINDOW, each);
    ctx.ledger.add(r.chunks, r.bytes);
    chunks += r.chunks;
  }
  return chunks;
}
