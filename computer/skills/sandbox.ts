/**
 * The SKILL sandbox (D21): turns a requested `rel_path` into a real file
 * inside a package root, or a 4017 reason. Used at mint time (`client:get_skill`), at pull time
 * (every `client:get_blob` re-runs it, D17) and by the registry to read `SKILL.md` itself.
 *
 * Lexical rules, checked before the file system is touched (so the answer never depends on what
 * exists, and `.skillenv` answers the same whether it exists or not):
 * - absent or `""` → `SKILL.md` (D21).
 * - a NUL byte, a backslash, a leading `/` (absolute), a `..` segment anywhere (even one that would
 *   stay inside), or a `:` inside a segment (drive letters, ADS, URL schemes) → `traversal`.
 * - a segment equal to `.skillenv` in any letter case, at any depth → `forbidden`.
 * - empty segments (`a//b`) and `.` segments collapse, as in POSIX; a trailing `/` names a
 *   directory, and directories are `not_found` (D21).
 * - percent-encoding, fullwidth dots and other look-alikes are NOT decoded: `%2e%2e` is a file
 *   literally named `%2e%2e` (usually `not_found`). Nothing below decodes anything, so no
 *   spelling can become `..` later.
 * File-system rules: `realpath(root/rel)` must stay inside `realpath(root)` (symlink escape →
 * `traversal`); the resolved path is checked again for a `.skillenv` segment (a symlink to a
 * `.skillenv` → `forbidden`); it must be a regular file (directories, FIFOs, devices, dangling
 * links, over-long names → `not_found`).
 * Hard links: a path names a file, but a hard link is the same file under another name, which
 * no check of names or realpaths can see (a file linked in from outside the package, or a
 * `.skillenv` linked under an innocent name). So a regular file with more than one link is
 * `forbidden`, unless the operator allows hard links (`allowHardLinks`); even then, one that is
 * the same file as a `.skillenv` in its own package (the root or a directory on its path) stays
 * `forbidden`.
 */
import { lstatSync, readdirSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, relative, sep } from "node:path";
import type { HeldFiles } from "../contracts.ts";

/** Files no `rel_path` may ever reach (compared lower-cased; D21). */
const FORBIDDEN_NAMES = new Set([".skillenv"]);

export const DEFAULT_REL_PATH = "SKILL.md";

export type SandboxReason = "traversal" | "forbidden" | "not_found";

/** A `rel_path` that passed the lexical rules. */
export interface LexedPath {
  ok: true;
  relPath: string;
  directory: boolean;
}

export type LexResult = LexedPath | { ok: false; reason: SandboxReason };

function isForbiddenSegment(seg: string): boolean {
  return FORBIDDEN_NAMES.has(seg.toLowerCase());
}

/** Lexical half of the sandbox: pure string work. `relPath` comes back normalized. */
export function lexRelPath(raw: string | undefined): LexResult {
  const rel = raw === undefined || raw === "" ? DEFAULT_REL_PATH : raw;
  if (rel.includes("\0") || rel.includes("\\") || rel.startsWith("/")) {
    return { ok: false, reason: "traversal" };
  }
  const segments = rel.split("/");
  if (segments.some((s) => s === ".." || s.includes(":")))
    return { ok: false, reason: "traversal" };
  if (segments.some(isForbiddenSegment)) return { ok: false, reason: "forbidden" };
  const kept = segments.filter((s) => s !== "" && s !== ".");
  const directory = kept.length === 0 || rel.endsWith("/") || rel.endsWith("/.") || rel === ".";
  return { ok: true, relPath: kept.join("/"), directory };
}

/** What the operator decides about the files a package may serve. */
export interface SandboxPolicy {
  /** Serve regular files with more than one hard link (default false: `forbidden`). */
  readonly allowHardLinks?: boolean | undefined;
}

export type SandboxResult =
  | { ok: true; relPath: string; target: string }
  | { ok: false; reason: SandboxReason }
  /** The package root itself is gone (skill removed after the registry was built). */
  | { ok: false; reason: "root_gone" };

/** errno codes that mean "no such servable file" rather than a real I/O failure. */
const MISSING = new Set(["ENOENT", "ENOTDIR", "ENAMETOOLONG", "ELOOP", "EACCES", "EPERM"]);

function isMissing(err: unknown): boolean {
  return MISSING.has((err as NodeJS.ErrnoException).code ?? "");
}

/**
 * Full sandbox: lexical rules, then realpath containment, the forbidden check on the resolved
 * path, and "regular file". `root` comes from the registry only (never from a name or a handle).
 * Throws only on unexpected I/O errors (EIO...).
 *
 * It runs on every pull (D17), so its cost is per chunk, and on this VM the cost is the number of
 * system calls (~2.3 µs each): realpath(3) reads every component of a path once (a readlink
 * each), so `realpath(root)` then `realpath(root/rel)` walked the root twice (13 calls for a file
 * at the top of a package five directories deep). `realpath(root)` is still taken every time;
 * below it, each component of the lexically clean `rel` is lstat'ed once: while none is a
 * symlink, `realpath(root)/rel` IS the realpath (no `.`, `..` or empty segment is left after
 * lexRelPath), and the last lstat answers "regular file". The first symlink met sends the whole
 * path through realpath(3) and the checks below, exactly as before. Same answers, same order of
 * checks (test/computer/skills/sandbox-equivalence.test.ts compares both on a package of traps);
 * as with realpath itself the walk is not atomic, which is why the engine opens the result with
 * O_NOFOLLOW and checks the descriptor's /proc path before serving.
 * Synchronous on purpose: these calls are answered from the kernel's dentry/inode caches in
 * microseconds, less than the main thread's share of one libuv thread-pool round trip.
 */
export async function resolveInPackage(
  root: string,
  raw: string | undefined,
  policy: SandboxPolicy = {},
): Promise<SandboxResult> {
  const lexed = lexRelPath(raw);
  if (!lexed.ok) return lexed;
  return resolveLexed(root, lexed, policy);
}

/**
 * `resolveInPackage` after the lexical rules, for a caller that lexed `rel_path` before (the
 * lexical half is a pure function of the string: a pull re-checks the file system, not spelling).
 */
export function resolveLexed(
  root: string,
  lexed: LexedPath,
  policy: SandboxPolicy = {},
): SandboxResult {
  let rootReal: string;
  try {
    rootReal = realpathSync.native(root);
  } catch (err) {
    if (isMissing(err)) return { ok: false, reason: "root_gone" };
    throw err;
  }
  if (lexed.directory) return rootIsDirectory(rootReal) ? NOT_FOUND : ROOT_GONE;
  const walked = walkPlain(rootReal, lexed.relPath);
  if (walked === "missing") return rootIsDirectory(rootReal) ? NOT_FOUND : ROOT_GONE;
  if (walked !== "symlink") {
    if (!walked.isFile()) return NOT_FOUND;
    const target = rootReal + sep + lexed.relPath;
    if (refusedLinks(walked, rootReal, target, policy)) return FORBIDDEN;
    return { ok: true, relPath: lexed.relPath, target };
  }
  return resolveThroughSymlinks(rootReal, lexed.relPath, policy);
}

const FORBIDDEN = { ok: false, reason: "forbidden" } as const;

/** The hard-link rule of the header for a regular file `st` at `target` inside `rootReal`. */
function refusedLinks(st: Stats, rootReal: string, target: string, policy: SandboxPolicy): boolean {
  if (st.nlink <= 1) return false;
  if (policy.allowHardLinks !== true) return true;
  for (let dir = dirname(target); ; dir = dirname(dir)) {
    if (holdsSkillenv(dir, st)) return true;
    if (dir === rootReal || !dir.startsWith(rootReal + sep)) return false;
  }
}

/** Whether `dir` has a `.skillenv` (any letter case) that is the same file as `st`. */
function holdsSkillenv(dir: string, st: Stats): boolean {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return false;
  }
  for (const name of names) {
    if (!isForbiddenSegment(name)) continue;
    try {
      const other = lstatSync(dir + sep + name);
      if (other.ino === st.ino && other.dev === st.dev) return true;
    } catch {
      // gone meanwhile: not this file
    }
  }
  return false;
}

const NOT_FOUND = { ok: false, reason: "not_found" } as const;
const ROOT_GONE = { ok: false, reason: "root_gone" } as const;

/** "The package root is a directory" (stat of its realpath); a missing root is not one. */
function rootIsDirectory(rootReal: string): boolean {
  try {
    return statSync(rootReal).isDirectory();
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/**
 * lstat of every component of `relPath` under `rootReal`: the last component's stats when none
 * is a symlink and every earlier one is a directory; `"symlink"` at the first symlink;
 * `"missing"` when a component does not exist or is not a directory (ENOENT / ENOTDIR).
 */
function walkPlain(rootReal: string, relPath: string): Stats | "symlink" | "missing" {
  const parts = relPath.split("/");
  let path = rootReal;
  let st: Stats | undefined;
  for (let i = 0; i < parts.length; i++) {
    if (st !== undefined && !st.isDirectory()) return "missing";
    path += sep + parts[i];
    try {
      st = lstatSync(path);
    } catch (err) {
      if (isMissing(err)) return "missing";
      throw err;
    }
    if (st.isSymbolicLink()) return "symlink";
  }
  return st ?? "missing";
}

/** The general case: realpath(3) of the whole path, then containment, forbidden, regular file. */
function resolveThroughSymlinks(
  rootReal: string,
  relPath: string,
  policy: SandboxPolicy,
): SandboxResult {
  let target: string;
  try {
    target = realpathSync.native(rootReal + sep + relPath);
  } catch (err) {
    if (isMissing(err)) return NOT_FOUND;
    throw err;
  }
  const inside = relative(rootReal, target);
  // A served file stays inside realpath(root): `relative` starting with `..` or absolute
  // (another drive/root) means the resolved path left the package.
  if (inside === "" || inside === ".." || inside.startsWith(".." + sep) || inside.startsWith(sep)) {
    return inside === "" ? NOT_FOUND : { ok: false, reason: "traversal" };
  }
  if (inside.split(sep).some(isForbiddenSegment)) return FORBIDDEN;
  let st: Stats;
  try {
    st = statSync(target);
  } catch (err) {
    if (isMissing(err)) return NOT_FOUND;
    throw err;
  }
  if (!st.isFile()) return NOT_FOUND;
  if (refusedLinks(st, rootReal, target, policy)) return FORBIDDEN;
  return { ok: true, relPath, target };
}

/** A package root's realpath, and the identity of that directory, from its last full check. */
interface SeenRoot {
  real: string;
  dev: bigint;
  ino: bigint;
}

/** Roots remembered at most (one per skill pulled recently); the oldest is forgotten first. */
const SEEN_ROOTS = 256;

/**
 * The pull-time sandbox answered from a descriptor the blob engine already holds on the file
 * (D17 at the cost of one stat). Every pull runs either this or the full `resolveLexed`; this one
 * answers only when each fact the full walk would establish is shown, now, another way:
 * - `stat(root)` (and `stat(real)` when the root is a symlink) reaches the directory the last
 *   full check resolved, and the engine's descriptor reads back, in /proc, exactly
 *   `real/relPath`. The kernel prints that path from the file's own chain of directory entries,
 *   so right now `real` and every component of `relPath` under it are real directories (no
 *   symlink anywhere), `real` is that directory's realpath and so `realpath(root)`, and
 *   `realpath(root/relPath)` is `real/relPath`: inside the package, the same path the
 *   component-by-component lstat walk would find, with no symlink to follow.
 * - the descriptor's fstat says a regular file with one link: what the walk's last lstat would
 *   say of the same inode (a second link, allowed or not, goes to the full check).
 * The lexical rules (traversal, `.skillenv` in any case) ran on `relPath` already. Anything else
 * (a root not seen yet or changed, no descriptor, the descriptor elsewhere or changed, a
 * directory, SKILL.md, a hard link) returns `undefined`, and the caller runs the full check,
 * which also refreshes what is remembered of the root. Like the full walk this is not atomic;
 * the engine's checks of the descriptor after this (the read bracketed by two fstats, D18) are
 * unchanged.
 */
export class HeldSandbox {
  readonly #roots = new Map<string, SeenRoot>();

  /**
   * Records the root of a full check that passed (`resolveLexed`'s answer): its realpath is the
   * target without `/relPath` when the walk met no symlink. What is recorded is only a
   * hypothesis that `resolve` verifies on every use.
   */
  saw(root: string, result: SandboxResult): void {
    if (!result.ok || !result.target.endsWith(sep + result.relPath)) return;
    const real = result.target.slice(0, -(result.relPath.length + 1));
    if (this.#roots.get(root)?.real === real) return;
    const st = statSync(real, { bigint: true, throwIfNoEntry: false });
    if (!st?.isDirectory()) return;
    if (this.#roots.size >= SEEN_ROOTS) this.#roots.delete(this.#roots.keys().next().value!);
    this.#roots.set(root, { real, dev: st.dev, ino: st.ino });
  }

  /** `resolveLexed(root, lexed)` when the engine's descriptor proves it; else `undefined`. */
  resolve(root: string, lexed: LexedPath, held: HeldFiles): SandboxResult | undefined {
    if (lexed.directory) return undefined;
    const seen = this.#roots.get(root);
    if (seen === undefined) return undefined;
    if (!sameDirectory(root, seen) || (root !== seen.real && !sameDirectory(seen.real, seen))) {
      this.#roots.delete(root); // moved or replaced: the next full check records it again
      return undefined;
    }
    const target = seen.real + sep + lexed.relPath;
    const st = held.at(target);
    if (st === undefined || !st.isFile() || st.nlink !== 1n) return undefined;
    return { ok: true, relPath: lexed.relPath, target };
  }
}

function sameDirectory(path: string, seen: SeenRoot): boolean {
  try {
    const st = statSync(path, { bigint: true, throwIfNoEntry: false });
    return st !== undefined && st.ino === seen.ino && st.dev === seen.dev;
  } catch {
    return false;
  }
}
