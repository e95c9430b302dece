/**
 * The Skill Registry: built from the skill home, the ONLY map from a skill name to its package
 * root: a path is never derived from a name.
 *
 * Home layout (D20):
 *   user/<skill>/SKILL.md                          name `<skill>`            source `user`
 *   marketplace/<repo>/<plugin>/<skill>/SKILL.md   name `<plugin>:<skill>`   source `marketplace:<repo>`
 *   mcp/<bundle_id>/<skill>/SKILL.md               name `mcp:<bundle_id>:<skill>` source `mcp:<bundle_id>`
 * `mcp/<bundle_id>/.orphaned` (any file type) orphans every skill of that bundle. It is checked
 * live (`refs`, and the sandbox's check of every get_skill and pull), not only at rebuild, so an
 * orphan is never served in the debounce window.
 *
 * Discovery order (what `client:get_skills` returns): `user`, then `marketplace`, then `mcp`;
 * inside each level, directory entries in ascending code-unit order of their names (JS string
 * sort, locale-independent). Entries whose name starts with `.` are never packages at any
 * discovery level (so `.git`, `.orphaned` and a staging dir like `mcp/<b>/.tmp-x` are ignored);
 * symlinked directories are followed at discovery levels (a package root may be a symlink; the
 * sandbox works on its realpath).
 *
 * A package is left out, with an ERROR log line, when: its directory name is not a valid name
 * segment (sandbox.ts, the name lexer), `SKILL.md` is missing or not servable by the sandbox, the frontmatter is
 * missing or invalid, the frontmatter `name` differs from the directory name, or its full name is
 * claimed by more than one package (possible only across marketplace repos: then ALL claimants
 * are left out, since picking one would depend on directory order rather than on intent).
 *
 * Optional metadata:
 * - marketplace `version`: string `version` of `<plugin>/plugin.json`, else of
 *   `<plugin>/.claude-plugin/plugin.json`.
 * - MCP sidecar, written by the tool service when it stages a skill:
 *   `mcp/<bundle_id>/<skill>/.a2c-source.json` = `{"uri"?: string, "version"?: string}` (UTF-8
 *   JSON, other keys ignored). `uri` is the `skill://` resource URI, `version` the resource's
 *   `_meta.version`. Missing or malformed → both fields absent (malformed: WARN log).
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { A2CSkillRef } from "@a2c-smcp/protocol";
import {
  MAX_FRONTMATTER_BYTES,
  parseFrontmatter,
  splitFrontmatter,
  type FrontmatterResult,
} from "./frontmatter.ts";
import { openRegular, readAt } from "./resource.ts";
import {
  exists,
  isBundleId,
  isKebabName,
  resolveInPackage,
  type SandboxPolicy,
} from "./sandbox.ts";

export const ORPHAN_MARKER = ".orphaned";
export const MCP_SIDECAR = ".a2c-source.json";
/** A marketplace repo directory name (it becomes part of `source`). */
const REPO_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export interface SkillEntry {
  readonly name: string;
  /** Absolute package root as discovered under the home (also `ref.path`). */
  readonly root: string;
  /** The ref without orphan filtering (orphans are decided live). */
  readonly ref: A2CSkillRef;
  /** Set for MCP skills: the bundle's orphan marker path. */
  readonly orphanMarker?: string;
}

export class SkillRegistry {
  /**
   * Exact match only. Whether an entry is orphaned is decided live by whoever serves it (the
   * sandbox's check, `refs`), not here.
   */
  readonly byName: ReadonlyMap<string, SkillEntry>;
  constructor(readonly entries: readonly SkillEntry[]) {
    this.byName = new Map(entries.map((e) => [e.name, e]));
  }

  /** Refs of every non-orphaned skill, in discovery order. */
  async refs(): Promise<A2CSkillRef[]> {
    const markers = new Map<string, boolean>();
    const out: A2CSkillRef[] = [];
    for (const e of this.entries) {
      if (e.orphanMarker !== undefined) {
        let orphaned = markers.get(e.orphanMarker);
        if (orphaned === undefined) {
          orphaned = await exists(e.orphanMarker);
          markers.set(e.orphanMarker, orphaned);
        }
        if (orphaned) continue;
      }
      out.push(e.ref);
    }
    return out;
  }
}

/** Subdirectories of `dir` that may be discovery entries: sorted, no dot-names, dirs (links followed). */
async function childDirs(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => !n.startsWith(".")).sort();
  } catch {
    return [];
  }
  // Stats in parallel: sequential awaits cost a thread-pool round trip each (see report).
  const isDir = await Promise.all(
    names.map((n) =>
      stat(join(dir, n)).then(
        (st) => st.isDirectory(),
        () => false, // dangling link or vanished entry: not a package
      ),
    ),
  );
  return names.filter((_, i) => isDir[i]);
}

interface Candidate {
  name: string;
  dirName: string;
  root: string;
  source: string;
  version?: string;
  uri?: string;
  orphanMarker?: string;
}

async function readJsonObject(path: string, log: Logger): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return null;
  }
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v))
      return v as Record<string, unknown>;
  } catch {
    /* fall through */
  }
  log.warn({ file: path }, "skill metadata file is not a JSON object; ignored");
  return null;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

async function collectCandidates(home: string, log: Logger): Promise<Candidate[]> {
  const out: Candidate[] = [];
  const bad = (path: string, why: string) => log.error({ package: path }, `skill left out: ${why}`);

  const userDir = join(home, "user");
  for (const d of await childDirs(userDir)) {
    if (!isKebabName(d)) bad(join(userDir, d), "directory name is not a valid skill name");
    else out.push({ name: d, dirName: d, root: join(userDir, d), source: "user" });
  }

  const mpDir = join(home, "marketplace");
  for (const repo of await childDirs(mpDir)) {
    if (!REPO_NAME.test(repo)) {
      bad(join(mpDir, repo), "marketplace repo directory name is not valid");
      continue;
    }
    for (const plugin of await childDirs(join(mpDir, repo))) {
      const pluginDir = join(mpDir, repo, plugin);
      if (!isKebabName(plugin)) {
        bad(pluginDir, "plugin directory name is not a valid plugin name");
        continue;
      }
      const manifest =
        (await readJsonObject(join(pluginDir, "plugin.json"), log)) ??
        (await readJsonObject(join(pluginDir, ".claude-plugin", "plugin.json"), log));
      const version = str(manifest?.version);
      for (const skill of await childDirs(pluginDir)) {
        const root = join(pluginDir, skill);
        if (!isKebabName(skill)) bad(root, "directory name is not a valid skill name");
        else {
          const c: Candidate = {
            name: `${plugin}:${skill}`,
            dirName: skill,
            root,
            source: `marketplace:${repo}`,
          };
          if (version !== undefined) c.version = version;
          out.push(c);
        }
      }
    }
  }

  const mcpDir = join(home, "mcp");
  for (const bundle of await childDirs(mcpDir)) {
    if (!isBundleId(bundle)) {
      bad(join(mcpDir, bundle), "MCP bundle directory name is not a valid bundle_id");
      continue;
    }
    const orphanMarker = join(mcpDir, bundle, ORPHAN_MARKER);
    for (const skill of await childDirs(join(mcpDir, bundle))) {
      const root = join(mcpDir, bundle, skill);
      if (!isKebabName(skill)) {
        bad(root, "directory name is not a valid skill name");
        continue;
      }
      const c: Candidate = {
        name: `mcp:${bundle}:${skill}`,
        dirName: skill,
        root,
        source: `mcp:${bundle}`,
        orphanMarker,
      };
      const sidecar = await readJsonObject(join(root, MCP_SIDECAR), log);
      const uri = str(sidecar?.uri);
      const version = str(sidecar?.version);
      if (uri !== undefined) c.uri = uri;
      if (version !== undefined) c.version = version;
      out.push(c);
    }
  }
  return out;
}

/** Parsed frontmatter by SKILL.md content signature: a rebuild re-parses only what changed. */
type FrontmatterMemo = Map<string, FrontmatterResult | null>;

/** Reads and validates one candidate's SKILL.md frontmatter through the sandbox. */
async function toEntry(
  c: Candidate,
  log: Logger,
  prev: FrontmatterMemo,
  next: FrontmatterMemo,
  policy: SandboxPolicy,
): Promise<SkillEntry | null> {
  const bad = (why: string) => {
    log.error({ package: c.root, skill: c.name }, `skill left out: ${why}`);
    return null;
  };
  const found = await resolveInPackage(c.root, "SKILL.md", policy);
  if (!found.ok) return bad(`SKILL.md is not servable (${found.reason})`);
  const file = await openRegular(found.target);
  if (!file) return bad("SKILL.md is not servable (not_found)");
  let fm: FrontmatterResult | null | undefined = prev.get(file.key);
  try {
    if (fm === undefined) {
      const head = await readAt(file.fh, 0, Math.min(file.size, MAX_FRONTMATTER_BYTES + 1));
      const split = splitFrontmatter(head);
      fm = split ? parseFrontmatter(split.yaml) : null;
    }
  } finally {
    await file.fh.close();
  }
  next.set(file.key, fm);
  if (!fm) return bad("SKILL.md has no frontmatter (--- fences)");
  if (!fm.ok) return bad(fm.error);
  if (fm.value.name !== c.dirName) {
    return bad(`frontmatter name ${JSON.stringify(fm.value.name)} differs from the directory name`);
  }
  for (const w of fm.warnings) log.warn({ skill: c.name }, `skill frontmatter: ${w}`);
  const v = fm.value;
  const ref: A2CSkillRef = {
    name: c.name,
    source: c.source,
    path: c.root,
    description: v.description,
  };
  if (c.uri !== undefined) ref.uri = c.uri;
  if (v.license !== undefined) ref.license = v.license;
  if (v.compatibility !== undefined) ref.compatibility = v.compatibility;
  if (v.allowedTools !== undefined) ref.allowed_tools = v.allowedTools;
  if (v.metadata !== undefined) ref.skill_metadata = v.metadata;
  if (v.tags !== undefined) ref.tags = v.tags;
  if (c.version !== undefined) ref.version = c.version;
  const entry: SkillEntry = { name: c.name, root: c.root, ref };
  return c.orphanMarker !== undefined ? { ...entry, orphanMarker: c.orphanMarker } : entry;
}

/** How many packages are read at once during a build. */
const BUILD_CONCURRENCY = 16;

/** Builds registries from a home; remembers parsed frontmatter between builds. */
export class RegistryBuilder {
  private memo: FrontmatterMemo = new Map();

  constructor(
    private readonly home: string,
    private readonly log: Logger,
    /** The sandbox's operator choices: a SKILL.md it refuses leaves its skill out. */
    private readonly policy: SandboxPolicy = {},
  ) {}

  /** Scans the home (absolute) and builds a registry. Never throws for a bad package. */
  async build(): Promise<SkillRegistry> {
    const { home, log } = this;
    const candidates = await collectCandidates(home, log);
    const next: FrontmatterMemo = new Map();
    const results: Array<SkillEntry | null> = new Array<SkillEntry | null>(candidates.length);
    let cursor = 0;
    const worker = async () => {
      while (cursor < candidates.length) {
        const i = cursor++;
        const c = candidates[i]!;
        try {
          results[i] = await toEntry(c, log, this.memo, next, this.policy);
        } catch (err) {
          log.error({ package: c.root, err }, "skill left out: could not read its package");
          results[i] = null;
        }
      }
    };
    await Promise.all(Array.from({ length: BUILD_CONCURRENCY }, worker));
    this.memo = next; // only what this build saw: the memo never outgrows the home
    const entries = results.filter((e): e is SkillEntry => e !== null); // discovery order kept
    const count = new Map<string, number>();
    for (const e of entries) count.set(e.name, (count.get(e.name) ?? 0) + 1);
    const unique = entries.filter((e) => {
      if (count.get(e.name) === 1) return true;
      log.error({ package: e.root, skill: e.name }, "skill left out: its name is claimed twice");
      return false;
    });
    return new SkillRegistry(unique);
  }
}
