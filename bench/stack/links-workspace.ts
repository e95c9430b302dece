/**
 * What the sections that run on the harness's hosts (links, paths) share: the builds they run
 * (ours, and another checkout's with `--baseline`), a skill home whose files they write once,
 * the check of every downloaded file against what was written, and a fresh stack of one build
 * per run (or, for a plan that shares them, one stack of each build for the section).
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DownloadResult } from "../../scripts/links/agent-driver.ts";
import {
  OUR_BUILD,
  buildProblem,
  startStackOnLinks,
  type Build,
  type StackOnLinks,
  type StackOnLinksOptions,
} from "../../scripts/links/stack.ts";
import { openLinks, type Links } from "../../scripts/links/topology.ts";
import type { Ctx } from "../lib/context.ts";
import { fileDigests, writeContent } from "../lib/data.ts";
import { commitOf } from "../lib/git.ts";
import { expectDigest } from "../lib/integrity.ts";
import { MiB } from "../lib/stats.ts";

export interface LinksWorkspace {
  ctx: Ctx;
  /** The section's name: the prefix of its digests' messages and of its files' content seeds. */
  section: string;
  links: Links;
  /** The skill home the Computers serve (one skill). */
  home: string;
  skill: string;
  /** Where downloads and the stacks' state go. */
  work: string;
  /** sha256 of each asset file written, by name. */
  assets: Map<string, string>;
  /** A counter for unique file and folder names. */
  seq: number;
  /**
   * Whether runs share stacks (the quick plan: every code path, not figures to compare): the
   * last stack is kept for the next run of the same build, and closed before another starts (the
   * hosts hold one stack at a time: the Server's port is fixed).
   */
  shareStacks: boolean;
  kept: { key: string; stack: StackOnLinks } | null;
}

/** Our build, and the baseline's with `--baseline`; throws if one cannot run. */
export function sectionBuilds(ctx: Ctx): Build[] {
  const builds: Build[] = [OUR_BUILD];
  if (ctx.baseline) builds.push({ root: ctx.baseline, label: "baseline" });
  for (const b of builds) {
    const problem = buildProblem(b.root);
    if (problem) throw new Error(`${b.label}: ${problem}`);
  }
  return builds;
}

/** The builds as the section's data names them. */
export function buildLabels(builds: readonly Build[]): { label: string; commit: string | null }[] {
  return builds.map((b) => ({ label: b.label, commit: commitOf(b.root) }));
}

/**
 * The skill home and work folder under the run's data, and the hosts (`prefix`: their names);
 * `shareStacks`: runs of one build share a stack (see `LinksWorkspace.shareStacks`).
 */
export async function openWorkspace(
  ctx: Ctx,
  section: string,
  linksOptions: Parameters<typeof openLinks>[0],
  shareStacks = false,
): Promise<LinksWorkspace> {
  const skill = `${section}-data`;
  const home = join(ctx.dataDir, section, "home");
  const pkg = join(home, "user", skill);
  mkdirSync(pkg, { recursive: true, mode: 0o700 });
  for (const d of [home, join(home, "user"), pkg]) chmodSync(d, 0o700);
  writeFileSync(
    join(pkg, "SKILL.md"),
    `---\nname: ${skill}\ndescription: Files of the ${section} bench section\n---\n${section[0]!.toUpperCase()}${section.slice(1)} data.\n`,
  );
  const work = join(ctx.dataDir, section, "work");
  mkdirSync(work, { recursive: true });
  const links = await openLinks({
    ...linksOptions,
    ...(ctx.congestion ? { congestion: ctx.congestion } : {}),
  });
  const cc = await links.congestionControl().catch(() => "?");
  ctx.log(`${section}: the hosts' TCP congestion control is ${cc}`);
  return {
    ctx,
    section,
    links,
    home,
    skill,
    work,
    assets: new Map(),
    seq: 0,
    shareStacks,
    kept: null,
  };
}

/** Closes the stack the workspace kept, then its hosts. */
export async function closeWorkspace(ws: LinksWorkspace): Promise<void> {
  const kept = ws.kept;
  ws.kept = null;
  try {
    await kept?.stack.close();
  } finally {
    await ws.links.close();
  }
}

/** Writes (once) a skill file of `bytes` named `name`; returns its path in the skill. */
export function writeAsset(ws: LinksWorkspace, name: string, bytes: number): string {
  if (!ws.assets.has(name)) {
    const path = join(ws.home, "user", ws.skill, name);
    ws.assets.set(name, writeContent(path, `${ws.section}-${name}`, bytes));
  }
  return name;
}

/**
 * A completed download's file against the content written: the Computer's digest first (what the
 * SDK verified against), then the file's own bytes, read here. Counted in the run's integrity;
 * the file is removed.
 */
export function checkDownload(
  ws: LinksWorkspace,
  relPath: string,
  handleSha: string,
  dl: DownloadResult,
  dest: string,
): void {
  try {
    if (!dl.ok) return;
    const expected = ws.assets.get(relPath) ?? "";
    expectDigest(`${ws.section}: the Computer's digest of ${relPath}`, handleSha, expected);
    expectDigest(
      `${ws.section}: downloaded ${relPath}`,
      fileDigests(dest, 4 * MiB).sha256,
      expected,
    );
    ws.ctx.ledger.add(dl.chunks.answered, dl.totalSize, 1);
  } finally {
    rmSync(dest, { force: true });
  }
}

/**
 * `fn` with a fresh stack of `build` on the hosts (its state in a folder named `label-…`), or,
 * when the workspace shares stacks, with the kept one if it is of the same build.
 */
export async function withBuildStack<T>(
  ws: LinksWorkspace,
  build: Build,
  label: string,
  fn: (s: StackOnLinks) => Promise<T>,
  computer: Pick<StackOnLinksOptions, "computerArgs" | "computerHoldMs"> = {},
): Promise<T> {
  // Counted for every run, shared or not: the runs name their downloads after it.
  const workDir = join(ws.work, `${label}-${build.label}-${ws.seq++}`);
  const key = [build.root, computer.computerHoldMs ?? 0, ...(computer.computerArgs ?? [])].join(
    " ",
  );
  if (ws.kept?.key === key) return fn(ws.kept.stack);
  if (ws.kept) {
    const other = ws.kept.stack;
    ws.kept = null;
    await other.close();
  }
  const stack = await startStackOnLinks(ws.links, {
    build,
    skills: ws.home,
    workDir,
    ...computer,
  });
  if (ws.shareStacks) {
    ws.kept = { key, stack };
    return fn(stack);
  }
  try {
    return await fn(stack);
  } finally {
    await stack.close();
  }
}
