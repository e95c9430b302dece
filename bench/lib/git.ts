/** Which commit a checkout is at, as a report names it. */
import { execFileSync } from "node:child_process";

/**
 * The short commit of `root`'s HEAD, with `+changes` when tracked files differ from it; null
 * outside a git checkout (an unpacked tarball).
 */
export function commitOf(root: string): string | null {
  try {
    const git = (...args: string[]): string =>
      execFileSync("git", ["-C", root, ...args], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim();
    const head = git("rev-parse", "--short", "HEAD");
    const dirty = git("status", "--porcelain", "--untracked-files=no");
    return dirty ? `${head}+changes` : head;
  } catch {
    return null;
  }
}
