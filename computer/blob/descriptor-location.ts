/**
 * Where an open descriptor's file is now, compared with the path it was opened by (Linux:
 * `/proc/self/fd`). A directory component swapped for a symlink between a sandbox check and the
 * open makes it resolve `elsewhere` (served files stay inside the skill root: D17, D21); a file
 * renamed over after the open reads as `<path> (deleted)`: `replaced`. Where /proc is unavailable
 * the O_NOFOLLOW open is the only guard.
 * Synchronous on purpose: a readlink in /proc is answered from kernel memory in microseconds, far
 * less than a libuv thread-pool round trip.
 */
import { readlinkSync } from "node:fs";

export type DescriptorLocation = "same" | "replaced" | "elsewhere";

export function descriptorLocation(fd: number, path: string): DescriptorLocation {
  try {
    const target = readlinkSync(`/proc/self/fd/${fd}`);
    if (target === path) return "same";
    return target === `${path} (deleted)` ? "replaced" : "elsewhere";
  } catch (err) {
    const noProc = (err as NodeJS.ErrnoException).code === "ENOENT" && process.platform !== "linux";
    return noProc ? "same" : "elsewhere";
  }
}
