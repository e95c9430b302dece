/**
 * The SKILL sandbox (D17, D21, D104): the one check between a skill name and `rel_path` and
 * a file this Computer may serve, run by `client:get_skill` before it mints a handle
 * (`SkillSandbox.check`), by every pull of a skill handle as the `skill` Producer
 * (`SkillSandbox.resolve`), and, its file-system half, by the registry on each SKILL.md
 * (`resolveInPackage`). In this order:
 * 1. The name lexer (docs/protocol.md, SKILL channel): `<skill>` (user), `<plugin>:<skill>`
 *    (marketplace) or `mcp:<bundle_id>:<skill>` (MCP-staged; the head MUST be the literal `mcp`),
 *    before any lookup, so a malformed name never becomes a file-system path (4016 before 4014).
 * 2. The registry's entry by exact name (registry.ts: the ONLY map from a name to a package
 *    root) and an MCP bundle's orphan marker, looked at live so an orphan is never served.
 * 3. The lexical rules of `rel_path`, before the file system is touched (so the answer never
 *    depends on what exists): absent or `""` → `SKILL.md`; a NUL, a backslash, a leading `/`, a
 *    `..` segment anywhere (even one that would stay inside) or a `:` inside a segment (drive
 *    letters, ADS, URL schemes) → `traversal`; a `.skillenv` segment in any letter case, at any
 *    depth → `forbidden`; empty and `.` segments collapse as in POSIX; a trailing `/` names a
 *    directory, and directories are `not_found`. Nothing is decoded (`%2e%2e` is a file named
 *    `%2e%2e`, fullwidth dots are not dots), so no spelling can become `..` later.
 * 4. The file system: `realpath(root/rel)` stays inside `realpath(root)` (a symlink escape →
 *    `traversal`), has no `.skillenv` segment (a symlink to one → `forbidden`) and is a regular
 *    file (anything else, or a dangling link → `not_found`). A hard link is the same file under
 *    another name, which no check of names can see, so a file with more than one link is
 *    `forbidden` unless the operator allows hard links (`allowHardLinks`), and even then one that
 *    is a `.skillenv` of its own package (the root or a directory on its path) stays `forbidden`.
 * 5. What the file is: its MIME type from a built-in table, never the host's, so a resource has
 *    one MIME on every OS (the basename's last extension, any case; none, a bare dotfile or an
 *    unknown one → `application/octet-stream`: binary, always a handle), and whether it is a
 *    SKILL.md (served derived, its frontmatter removed: D21).
 * A handle only names the skill and a rel_path, so it is never a file-read token: a pull takes the
 * package root from the registry again and runs the check again (D17). Unknown skill, package
 * root gone or file deleted → `gone`; orphaned, escaping or forbidden → `forbidden`.
 */
import { lstat } from "node:fs/promises";
import { lstatSync, readdirSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, relative, sep } from "node:path";
import type { DerivedStore, DeriveLimits } from "../blob/derived.ts";
import type { HandleFields, HeldFiles, Producer, ResolveResult } from "../contracts.ts";
import type { SandboxCheckCounter } from "../metrics.ts";

/** What the check reads of a registry entry (registry.ts, which imports this file). */
type SkillPackage = { readonly root: string; readonly orphanMarker?: string };

// ---------------------------------------------------------------------------------------------
// 1. and 5.: what a name says (pure string work, no I/O)

/** Strict kebab: `[a-z0-9-]`, 1–64 chars, no leading/trailing `-`, no `--`. */
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const KEBAB_MAX = 64;

/** An MCP bundle id, verbatim: `[A-Za-z0-9_-]+`, no `.`, no `__`, case preserved. */
const BUNDLE_ID = /^[A-Za-z0-9_-]+$/;

export function isKebabName(s: string): boolean {
  return s.length <= KEBAB_MAX && KEBAB.test(s);
}

export function isBundleId(s: string): boolean {
  return BUNDLE_ID.test(s) && !s.includes("__");
}

export type ParsedSkillName =
  | { kind: "user"; skill: string }
  | { kind: "marketplace"; plugin: string; skill: string }
  | { kind: "mcp"; bundleId: string; skill: string };

/** Lexes a wire skill name; `null` means 4016. Pure string work, no I/O. */
export function lexSkillName(name: string): ParsedSkillName | null {
  const parts = name.split(":");
  if (parts.length === 1) {
    const [skill] = parts as [string];
    return isKebabName(skill) ? { kind: "user", skill } : null;
  }
  if (parts.length === 2) {
    const [plugin, skill] = parts as [string, string];
    return isKebabName(plugin) && isKebabName(skill)
      ? { kind: "marketplace", plugin, skill }
      : null;
  }
  if (parts.length === 3) {
    const [head, bundleId, skill] = parts as [string, string, string];
    if (head !== "mcp") return null;
    return isBundleId(bundleId) && isKebabName(skill) ? { kind: "mcp", bundleId, skill } : null;
  }
  return null;
}

/** Extension → MIME type, each line `type ext…` (docs/protocol.md, SKILL channel). */
const TABLE: ReadonlyMap<string, string> = new Map(
  [
    // Mandated by the protocol.
    "text/markdown md markdown",
    "text/plain txt",
    "application/json json",
    "application/xml xml",
    "application/yaml yaml yml",
    "application/toml toml",
    "text/x-rst rst",
    // Common text in skill packages (scripts, data, web).
    "text/csv csv",
    "text/tab-separated-values tsv",
    "text/html html htm",
    "text/css css",
    "application/javascript js mjs cjs",
    "text/x-typescript ts",
    "text/x-python py",
    "text/x-shellscript sh bash",
    "text/x-ruby rb",
    "text/x-go go",
    "text/x-rust rs",
    "text/x-java java",
    "text/x-c c h",
    "text/x-c++ cpp",
    "text/x-sql sql",
    "text/plain ini cfg log",
    "image/svg+xml svg",
    // Binary.
    "image/png png",
    "image/jpeg jpg jpeg",
    "image/gif gif",
    "image/webp webp",
    "image/bmp bmp",
    "image/vnd.microsoft.icon ico",
    "image/tiff tif tiff",
    "image/avif avif",
    "application/pdf pdf",
    "application/zip zip",
    "application/gzip gz tgz",
    "application/x-tar tar",
    "application/x-bzip2 bz2",
    "application/x-xz xz",
    "application/x-7z-compressed 7z",
    "audio/wav wav",
    "audio/mpeg mp3",
    "audio/ogg ogg",
    "audio/flac flac",
    "audio/mp4 m4a",
    "video/mp4 mp4",
    "video/webm webm",
    "video/quicktime mov",
    "font/woff woff",
    "font/woff2 woff2",
    "font/ttf ttf",
    "font/otf otf",
    "application/wasm wasm",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet xlsx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation pptx",
    "application/octet-stream bin",
  ].flatMap((line) => {
    const [type, ...extensions] = line.split(" ");
    return extensions.map((ext) => [ext, type!] as const);
  }),
);

export const DEFAULT_MIME = "application/octet-stream";

/** MIME of a file by its basename (`SKILL.md` → `text/markdown` through the `.md` entry). */
export function mimeForPath(relPath: string): string {
  const base = relPath.slice(relPath.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return DEFAULT_MIME; // no extension, or a dotfile such as `.env`
  return TABLE.get(base.slice(dot + 1).toLowerCase()) ?? DEFAULT_MIME;
}

/** A package's SKILL.md (served as a derived resource: its frontmatter removed, D21). */
export function isSkillMd(relPath: string): boolean {
  return relPath === "SKILL.md" || relPath.endsWith("/SKILL.md");
}

// ---------------------------------------------------------------------------------------------
// 3. and 4.: a rel_path inside a package root

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
 * Steps 3 and 4 for a package `root` that comes from the registry only (never from a name or a
 * handle); throws only on unexpected I/O errors (EIO...). It runs on every pull (D17), where its
 * cost is its system calls: `realpath(root)` is taken, then each component of the lexically clean
 * `rel` is lstat'ed once. While none is a symlink, `realpath(root)/rel` IS the realpath (no `.`,
 * `..` or empty segment is left after lexRelPath) and the last lstat answers "regular file"; the
 * first symlink sends the whole path through realpath(3) and the checks after it
 * (test/computer/skills/sandbox-equivalence.test.ts compares both on a package of traps). Like
 * realpath the walk is not atomic: the engine opens the result with O_NOFOLLOW and checks the
 * descriptor's /proc path before serving. Synchronous: the kernel's dentry and inode caches answer
 * these calls in microseconds, less than a thread-pool round trip costs the main thread.
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
 * Steps 3 and 4 at pull time, answered from a descriptor the blob engine already holds on the
 * file (D17 at the cost of one stat), only when each fact the full walk would establish is shown,
 * now, another way:
 * - `stat(root)` (and `stat(real)` when the root is a symlink) reaches the directory the last
 *   full check resolved, and the engine's descriptor reads back, in /proc, exactly
 *   `real/relPath`. The kernel prints that path from the file's own chain of directory entries,
 *   so `real` and every component of `relPath` under it are real directories right now, and
 *   `realpath(root/relPath)` is `real/relPath`: what the lstat walk would find.
 * - the descriptor's fstat says a regular file with one link, as the walk's last lstat would.
 * Anything else (a root not seen yet or changed, no descriptor or one elsewhere, a directory,
 * SKILL.md, a hard link) is `undefined`: the caller runs the full check, which also refreshes
 * what is remembered of the root. Like the walk this is not atomic; the engine's checks of the
 * descriptor after it (the read bracketed by two fstats, D18) are unchanged.
 */
class HeldSandbox {
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

// ---------------------------------------------------------------------------------------------
// The check, at mint and at pull

/** Any directory entry counts (a file, a directory, even a dangling symlink). */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** A skill name and a `rel_path` as read before any file is looked at (steps 1, 3 and 5). */
interface Request {
  name: string;
  lexed: LexResult;
  mimeType: string;
  skillMd: boolean;
}

/** `null` when the name does not lex (4016 at mint, `invalid_handle` at pull). */
function read(name: string, relPath: string | undefined): Request | null {
  if (lexSkillName(name) === null) return null;
  const lexed = lexRelPath(relPath);
  const rel = lexed.ok ? lexed.relPath : "";
  return { name, lexed, mimeType: mimeForPath(rel), skillMd: isSkillMd(rel) };
}

/** A file the check lets through: where it is, and what it is. */
export interface SkillFile {
  ok: true;
  relPath: string;
  target: string;
  mimeType: string;
  skillMd: boolean;
}

/** Why the check refused (each caller says it its way: a 4014/4017 at mint, a 4018 at pull). */
export type SkillRefusal = {
  ok: false;
  reason: "unknown" | "orphaned" | "root_gone" | SandboxReason;
};

/** The fields of a `skill` handle record: the registry name and the normalized rel_path. */
export type SkillHandleFields = {
  n: string;
  p: string;
};

export interface SkillSandboxDeps {
  /** The registry the home's last scan built (its owner replaces it on each rebuild). */
  live: { readonly registry: { readonly byName: ReadonlyMap<string, SkillPackage> } };
  /** Derived SKILL.md bodies (computer/blob/derived.ts). */
  derived: DerivedStore;
  /** `skillMdLimits(config)`: the hard cap and the in-memory tier. */
  limits: DeriveLimits;
  /** The operator's choices (`config`), applied at mint and at pull. */
  policy?: SandboxPolicy | undefined;
  /** Counts each pull-time check by how it was answered (the Computer's metric). */
  sandboxChecks?: SandboxCheckCounter | undefined;
}

/** The check of the header, and the `skill` Producer that runs it on every pull. */
export class SkillSandbox implements Producer {
  readonly kind = "skill" as const;
  readonly #held = new HeldSandbox();
  /**
   * Pull requests by handle record. The blob engine hands every pull of a handle the same frozen
   * fields object (computer/blob/handle.ts remembers opened handles), so a handle's strings are
   * read once; the registry and the file system are checked on every pull (D17).
   */
  readonly #requests = new WeakMap<HandleFields, Request | null>();

  constructor(private readonly deps: SkillSandboxDeps) {}

  /** `client:get_skill`'s check; `null` when the name does not lex (4016). */
  async check(name: string, relPath: string | undefined): Promise<SkillFile | SkillRefusal | null> {
    const request = read(name, relPath);
    return request && this.#check(request, false);
  }

  /** Pull-time re-authorization of an authenticated handle's fields (D17). */
  async resolve(
    raw: HandleFields,
    _ctx?: unknown,
    held?: HeldFiles,
  ): Promise<ResolveResult | null> {
    const request = this.#requestOf(raw);
    if (!request) return null;
    const file = await this.#check(request, true, held);
    if (!file.ok) {
      const gone = file.reason === "unknown" || file.reason === "root_gone";
      return { ok: false, reason: gone || file.reason === "not_found" ? "gone" : "forbidden" };
    }
    if (!file.skillMd) {
      // Raw file: the engine opens it, snapshots it and hashes it through its hash cache.
      // `canonical`: the engine re-checks the opened descriptor against this realpath (a race
      // between this check and the open must not escape the package).
      return {
        ok: true,
        source: { type: "file", path: file.target, mimeType: file.mimeType, canonical: true },
      };
    }
    // SKILL.md: derived bytes (frontmatter stripped), produced once per content signature. A
    // body that grew past the hard cap since minting is "no longer servable" (gone).
    const got = await this.deps.derived.get(file.target, "skill-md", this.deps.limits);
    if (!got.ok) {
      // A disk fault of the derived store is said as such (D57): storage_full, storage_error.
      return { ok: false, reason: got.reason === "too_large" ? "gone" : got.reason };
    }
    return { ok: true, source: this.deps.derived.source(got.derived, file.mimeType) };
  }

  /** `{n, p}` with nothing else and a name that lexes, read once per handle; else `null`. */
  #requestOf(fields: HandleFields): Request | null {
    let request = this.#requests.get(fields);
    if (request !== undefined) return request;
    const { n, p } = fields;
    const shaped = Object.keys(fields).length === 2 && typeof n === "string";
    request = shaped && typeof p === "string" && p !== "" ? read(n, p) : null;
    if (Object.isFrozen(fields)) this.#requests.set(fields, request);
    return request;
  }

  /**
   * Steps 2 to 4. At pull (`pull`), a raw file the engine holds a descriptor for (`held`) is shown
   * from it (`HeldSandbox`); whatever that cannot show goes through the full walk.
   */
  async #check(
    request: Request,
    pull: boolean,
    held?: HeldFiles,
  ): Promise<SkillFile | SkillRefusal> {
    const entry = this.deps.live.registry.byName.get(request.name);
    if (!entry) return { ok: false, reason: "unknown" };
    if (entry.orphanMarker !== undefined && (await exists(entry.orphanMarker))) {
      return { ok: false, reason: "orphaned" };
    }
    const { lexed, mimeType, skillMd } = request;
    if (!lexed.ok) return lexed;
    let found = held && !skillMd ? this.#held.resolve(entry.root, lexed, held) : undefined;
    if (found) this.deps.sandboxChecks?.inc({ path: "held" });
    else {
      found = resolveLexed(entry.root, lexed, this.deps.policy);
      if (pull) {
        this.deps.sandboxChecks?.inc({ path: "walk" });
        this.#held.saw(entry.root, found);
      }
    }
    return found.ok ? { ...found, mimeType, skillMd } : found;
  }
}
