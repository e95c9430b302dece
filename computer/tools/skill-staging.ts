/**
 * MCP-sourced skills, staging mode `resources` (D20): a configured MCP
 * server that offers `skill://<host>/<skill>/<rel_path>` resources has each skill package written to
 * `<home>/mcp/<bundle_id>/<skill>/`, where the SKILL service's registry finds it under the name
 * `mcp:<bundle_id>:<skill>`.
 *
 * - Staged into `<home>/.staging/` first, then renamed into place, so the registry never sees a
 *   half-written package. A package whose content digest did not change is not touched.
 * - The server goes away → `<home>/mcp/<bundle_id>/.orphaned` (skills hidden, not deleted); it comes
 *   back and re-declares its skills → restaged and the marker removed.
 * - Skills the server stops offering are removed. Staging failures are logged (ERROR) and the skill
 *   is not registered; the Agent never sees an error for them (batch robustness).
 * - A sidecar `.a2c-source.json` `{uri, version?, digest}` in each package records where it came from.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Resource } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";

export const ORPHAN_MARKER = ".orphaned";
export const SOURCE_SIDECAR = ".a2c-source.json";

const SKILL_DIR_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_FILES_PER_SKILL = 1000;
const MAX_DEPTH = 16;

interface SkillFile {
  rel: string;
  uri: string;
  resource: Resource;
}

interface SkillPackage {
  name: string;
  uri: string;
  files: SkillFile[];
}

export interface SkillStagerOptions {
  home: string;
  /** Largest total size of one staged package, in bytes. */
  maxPackageBytes: number;
  log: Logger;
  /** Called after staged skills changed (new, updated, removed, orphaned or restored). */
  onChanged(): void;
}

/** Parses `skill://<host>/<skill>/<rel...>`; null when any segment is unsafe. */
export function parseSkillUri(uri: string): { host: string; skill: string; rel: string } | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== "skill:" || url.search || url.hash || !url.hostname) return null;
  const segments = url.pathname.split("/").slice(1);
  if (segments.length < 2 || segments.length > MAX_DEPTH) return null;
  const decoded: string[] = [];
  for (const raw of segments) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    // Never let a URI name a path outside its package (or a reserved sidecar file).
    if (seg === "" || seg === "." || seg === ".." || /[/\\:\0]/.test(seg)) return null;
    decoded.push(seg);
  }
  const [skill, ...rest] = decoded as [string, ...string[]];
  if (!SKILL_DIR_PATTERN.test(skill) || skill.length > 64) return null;
  const rel = rest.join("/");
  if (rel === SOURCE_SIDECAR) return null;
  return { host: url.hostname, skill, rel };
}

function declaredMode(resource: Resource): string {
  const source = resource._meta?.source;
  const mode = (source as Record<string, unknown> | undefined)?.mode;
  return typeof mode === "string" ? mode : "resources";
}

export class SkillStager {
  private readonly opts: SkillStagerOptions;
  private readonly log: Logger;
  /** Per-bundle queue: a staging run and an orphaning never interleave. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(opts: SkillStagerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: "skill-staging" });
  }

  private get mcpRoot(): string {
    return join(this.opts.home, "mcp");
  }

  private enqueue(bundleId: string, job: () => Promise<void>): Promise<void> {
    const prev = this.queues.get(bundleId) ?? Promise.resolve();
    const next = prev
      .then(job)
      .catch((err: unknown) =>
        this.log.error({ err, bundle_id: bundleId }, "skill staging failed"),
      );
    this.queues.set(bundleId, next);
    return next;
  }

  /** Waits for every queued staging/orphaning job (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.queues.values()]);
  }

  /** At start every previously staged bundle is orphaned until its server re-declares it. */
  async orphanAllExisting(): Promise<void> {
    const bundles = await readdir(this.mcpRoot).catch(() => [] as string[]);
    for (const b of bundles) {
      if (b.startsWith(".")) continue;
      await this.enqueue(b, async () => {
        await this.writeMarker(b);
      });
    }
  }

  orphan(bundleId: string): Promise<void> {
    return this.enqueue(bundleId, async () => {
      if (await this.writeMarker(bundleId)) this.opts.onChanged();
    });
  }

  stage(bundleId: string, client: Client): Promise<void> {
    return this.enqueue(bundleId, () => this.stageNow(bundleId, client));
  }

  /** Writes the orphan marker if the bundle has a directory; true when it was newly written. */
  private async writeMarker(bundleId: string): Promise<boolean> {
    const dir = join(this.mcpRoot, bundleId);
    const entries = await readdir(dir).catch(() => null);
    if (entries === null || entries.includes(ORPHAN_MARKER)) return false;
    await writeFile(join(dir, ORPHAN_MARKER), JSON.stringify({ since: new Date().toISOString() }));
    this.log.info({ bundle_id: bundleId }, "mcp skills orphaned");
    return true;
  }

  private async stageNow(bundleId: string, client: Client): Promise<void> {
    const packages = client.getServerCapabilities()?.resources
      ? await this.enumerate(bundleId, client)
      : new Map<string, SkillPackage>();
    const bundleDir = join(this.mcpRoot, bundleId);
    let changed = false;
    const staged = new Set<string>();
    for (const pkg of packages.values()) {
      try {
        if (await this.stagePackage(bundleDir, pkg, client)) changed = true;
        staged.add(pkg.name);
      } catch (err) {
        this.log.error({ err, bundle_id: bundleId, skill: pkg.name }, "skill not staged");
      }
    }
    const existing = await readdir(bundleDir, { withFileTypes: true }).catch(() => []);
    for (const e of existing) {
      if (e.isDirectory() && !e.name.startsWith(".") && !staged.has(e.name)) {
        await rm(join(bundleDir, e.name), { recursive: true, force: true });
        changed = true;
      }
    }
    if (staged.size === 0) {
      if (existing.length > 0) await rm(bundleDir, { recursive: true, force: true });
    } else {
      const marker = join(bundleDir, ORPHAN_MARKER);
      const wasOrphaned = existing.some((e) => e.name === ORPHAN_MARKER);
      await rm(marker, { force: true });
      if (wasOrphaned) changed = true;
    }
    this.log.info({ bundle_id: bundleId, skills: [...staged], changed }, "mcp skills staged");
    if (changed) this.opts.onChanged();
  }

  /** resources/list with cursors, grouped into packages by skill directory. */
  private async enumerate(bundleId: string, client: Client): Promise<Map<string, SkillPackage>> {
    const packages = new Map<string, SkillPackage>();
    const hostOf = new Map<string, string>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor });
      for (const r of page.resources) {
        if (!r.uri.startsWith("skill://")) continue;
        const parsed = parseSkillUri(r.uri);
        if (!parsed) {
          this.log.error({ bundle_id: bundleId, uri: r.uri }, "unsafe skill:// uri ignored");
          continue;
        }
        if (declaredMode(r) !== "resources") {
          this.log.error({ uri: r.uri, mode: declaredMode(r) }, "unsupported skill staging mode");
          continue;
        }
        const host = hostOf.get(parsed.skill);
        if (host !== undefined && host !== parsed.host) {
          this.log.error({ uri: r.uri }, "skill offered under two hosts; keeping the first");
          continue;
        }
        hostOf.set(parsed.skill, parsed.host);
        let pkg = packages.get(parsed.skill);
        if (!pkg) {
          pkg = { name: parsed.skill, uri: `skill://${parsed.host}/${parsed.skill}`, files: [] };
          packages.set(parsed.skill, pkg);
        }
        if (pkg.files.length < MAX_FILES_PER_SKILL) {
          pkg.files.push({ rel: parsed.rel, uri: r.uri, resource: r });
        }
      }
      cursor = page.nextCursor;
      if (cursor !== undefined) {
        if (seen.has(cursor)) break;
        seen.add(cursor);
      }
    } while (cursor !== undefined);
    for (const [name, pkg] of packages) {
      if (!pkg.files.some((f) => f.rel === "SKILL.md")) {
        this.log.error({ bundle_id: bundleId, skill: name }, "skill without SKILL.md ignored");
        packages.delete(name);
      }
    }
    return packages;
  }

  /** Reads every file, stages it, swaps it in when its digest changed. True when it changed. */
  private async stagePackage(bundleDir: string, pkg: SkillPackage, client: Client) {
    const files: { rel: string; bytes: Buffer }[] = [];
    let total = 0;
    for (const f of pkg.files.sort((a, b) => a.rel.localeCompare(b.rel))) {
      const read = await client.readResource({ uri: f.uri });
      const item = read.contents.find((c) => c.uri === f.uri) ?? read.contents[0];
      if (!item) throw new Error(`resources/read returned nothing for ${f.uri}`);
      const bytes =
        "blob" in item && typeof item.blob === "string"
          ? Buffer.from(item.blob, "base64")
          : Buffer.from("text" in item && typeof item.text === "string" ? item.text : "", "utf8");
      total += bytes.byteLength;
      if (total > this.opts.maxPackageBytes) throw new Error("skill package exceeds the size cap");
      files.push({ rel: f.rel, bytes });
    }
    const digest = createHash("sha256");
    for (const f of files) {
      digest.update(f.rel).update("\0").update(createHash("sha256").update(f.bytes).digest());
    }
    const hex = digest.digest("hex");
    const dest = join(bundleDir, pkg.name);
    const current = await readFile(join(dest, SOURCE_SIDECAR), "utf8").catch(() => null);
    if (current !== null && (JSON.parse(current) as { digest?: string }).digest === hex) {
      return false;
    }
    const version = pkg.files.find((f) => f.rel === "SKILL.md")?.resource._meta?.version;
    const stagingRoot = join(this.opts.home, ".staging");
    const tmp = join(stagingRoot, `new-${randomBytes(8).toString("hex")}`);
    try {
      for (const f of files) {
        const path = join(tmp, f.rel);
        await mkdir(dirname(path), { recursive: true, mode: 0o700 });
        await writeFile(path, f.bytes, { mode: 0o600 });
      }
      const sidecar = {
        uri: pkg.uri,
        ...(typeof version === "string" ? { version } : {}),
        digest: hex,
      };
      await writeFile(join(tmp, SOURCE_SIDECAR), JSON.stringify(sidecar));
      await mkdir(bundleDir, { recursive: true, mode: 0o700 });
      const old = join(stagingRoot, `old-${randomBytes(8).toString("hex")}`);
      const hadOld = await rename(dest, old).then(
        () => true,
        () => false,
      );
      await rename(tmp, dest);
      if (hadOld) await rm(old, { recursive: true, force: true });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return true;
  }
}
