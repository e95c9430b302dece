/**
 * Live updates of the skill home (`notify:update_skills`; the protocol leaves mechanism and
 * debounce to the implementation). Detection = a digest of the discovery tree (every entry's
 * name, mode, size, inode, mtime and ctime, link targets), compared after a trigger. Triggers:
 * - non-recursive `fs.watch` on every directory of the tree, re-armed after each scan so new
 *   directories are watched too. Node 20's recursive `fs.watch` on Linux is a JS emulation that
 *   misses events in freshly created subdirectories, so it is not used;
 * - a periodic scan of the whole tree (`pollMs`, stretched to keep its cost under ~2 % of the
 *   time) as the safety net for what inotify cannot see (network file systems, dropped events).
 * A trigger (re)starts a `debounceMs` timer; when it fires the affected part is scanned, and if
 * its digest changed, `onChange` runs (registry rebuild) and `notify` is called ONCE for the
 * whole burst, only if attached.
 *
 * Scans never stall the Computer (D58):
 * - incremental: the tree is kept as scopes, one per discovery directory (its own entries) and
 *   one per package (everything inside it). A watch event rescans only the scope of the
 *   directory it came from (and the subtrees of entries that appeared or changed there); the
 *   periodic scan walks every scope;
 * - cooperative: directories are read in batches of `BATCH` entries (`opendir`, no whole-
 *   directory name array, no sort), each batch's `lstat`s in parallel, and the scan yields to
 *   the event loop whenever it has run `SLICE_MS` without doing so;
 * - bounded: each scope keeps a running sha1 and the list of its directories, never the entries'
 *   lines; a package is read up to `maxPackageEntries` entries (its `SKILL.md` always counts:
 *   it is described first), and the package that has more is logged (WARN, once until it fits
 *   again): changes beyond its first entries are then noticed only through its directories'
 *   own times and the periodic scan's reading of the same first entries. The whole tree is
 *   read up to `MAX_TREE_ENTRIES`.
 *
 * What is walked: `user/`, `marketplace/`, `mcp/` under the home. At discovery levels,
 * dot-entries are recorded but not descended, except `.claude-plugin` (so a staging dir only
 * counts once it is renamed into place), and symlinked directories are followed (a package root
 * may be a symlink). Inside packages, symlinks are recorded with their target and the target's
 * stat, never descended (no loops).
 */
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { lstat, opendir, readlink, stat } from "node:fs/promises";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Logger } from "pino";

/** Depth (in path segments below the home) of a package root per source. */
const ROOT_DEPTH: Readonly<Record<string, number>> = { user: 2, marketplace: 4, mcp: 3 };
const SOURCES = Object.keys(ROOT_DEPTH);
/** Entries read and `lstat`ed together: one thread-pool round per batch. */
const BATCH = 64;
/** Longest a scan runs before it lets the event loop turn. */
const SLICE_MS = 4;
/** Entries of one package read per scan by default (`maxPackageEntries`). */
export const DEFAULT_MAX_PACKAGE_ENTRIES = 10_000;
/** Entries read per scan of the whole tree, so a runaway home cannot grow the Computer. */
const MAX_TREE_ENTRIES = 200_000;

type ScopeKind = "discovery" | "package";

/** One part of the tree, scanned as a unit. */
interface Scope {
  readonly path: string;
  readonly kind: ScopeKind;
  /** Path segments below the home. */
  readonly depth: number;
  readonly source: string;
  digest: string;
  /** Every directory read for this scope (watched, and mapped back to the scope). */
  dirs: string[];
  /** Discovery scopes: each child scope's entry line, by child path. */
  children: Map<string, string>;
  entries: number;
  capped: boolean;
}

/** Lets the event loop turn once a scan has held it `SLICE_MS`. */
class Slices {
  #since = performance.now();
  async pause(): Promise<void> {
    if (performance.now() - this.#since < SLICE_MS) return;
    await nextTurn();
    this.#since = performance.now();
  }
}

/** One entry's line in the digest, and whether it is a directory to descend into. */
async function describe(
  path: string,
  name: string,
  discovery: boolean,
): Promise<{ line: string; dir: boolean } | null> {
  try {
    const l = await lstat(path);
    let line = `${name}\0${l.mode}\0${l.size}\0${l.ino}\0${l.mtimeMs}\0${l.ctimeMs}`;
    let isDir = l.isDirectory();
    if (l.isSymbolicLink()) {
      line += `\0->${await readlink(path)}`;
      try {
        const t = await stat(path);
        line += `\0${t.mode}\0${t.size}\0${t.ino}\0${t.mtimeMs}\0${t.ctimeMs}`;
        isDir = t.isDirectory() && discovery; // follow links only at discovery levels
      } catch {
        isDir = false; // dangling
      }
    }
    const skipped = discovery && name.startsWith(".") && name !== ".claude-plugin";
    return { line, dir: isDir && !skipped };
  } catch {
    return null; // vanished between readdir and lstat: the next scan sees the final state
  }
}

/** Names of `dir`'s entries in batches of `BATCH`, in directory order; nothing if unreadable. */
async function* entryBatches(dir: string): AsyncGenerator<string[]> {
  let handle;
  try {
    handle = await opendir(dir, { bufferSize: BATCH });
  } catch {
    return;
  }
  let batch: string[] = [];
  try {
    for await (const entry of handle) {
      batch.push(entry.name);
      if (batch.length === BATCH) {
        yield batch;
        batch = [];
      }
    }
  } catch {
    // Removed while read: what was read stands; the next scan sees the final state.
  }
  if (batch.length > 0) yield batch;
}

export interface ScanBudget {
  /** Entries of the whole tree still to be read in this scan. */
  left: number;
}

/** Scans one scope: its digest, directories, children and whether it was cut at the cap. */
async function scanScope(
  path: string,
  kind: ScopeKind,
  depth: number,
  source: string,
  maxPackageEntries: number,
  budget: ScanBudget,
  slices: Slices,
): Promise<Scope> {
  const scope: Scope = {
    path,
    kind,
    depth,
    source,
    digest: "",
    dirs: [],
    children: new Map(),
    entries: 0,
    capped: false,
  };
  const hash = createHash("sha1");
  const limit = kind === "package" ? maxPackageEntries : Number.POSITIVE_INFINITY;
  if (kind === "package") {
    // SKILL.md first: the one file whose edits must always be seen, whatever the cap.
    const skill = await describe(join(path, "SKILL.md"), "SKILL.md", false);
    hash.update(`SKILL.md:${skill?.line ?? "-"}\n`);
  }
  const pending = [path];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    scope.dirs.push(dir);
    hash.update(`${dir}\n`);
    const discovery = kind === "discovery";
    for await (const names of entryBatches(dir)) {
      if (scope.entries >= limit || budget.left <= 0) {
        scope.capped = true;
        break;
      }
      const room = Math.min(names.length, limit - scope.entries, budget.left);
      const batch = names.slice(0, room);
      scope.entries += batch.length;
      budget.left -= batch.length;
      const described = await Promise.all(
        batch.map((name) => describe(join(dir, name), name, discovery)),
      );
      for (let i = 0; i < batch.length; i++) {
        const d = described[i];
        if (!d) continue;
        hash.update(d.line);
        hash.update("\n");
        if (!d.dir) continue;
        const child = join(dir, batch[i]!);
        if (discovery) scope.children.set(child, d.line);
        else pending.push(child);
      }
      if (room < names.length) scope.capped = true;
      await slices.pause();
    }
    if (scope.capped) break;
  }
  scope.digest = hash.digest("base64");
  return scope;
}

/** The kind of the scope at `depth` below the home for `source`. */
function kindAt(depth: number, source: string): ScopeKind {
  return depth >= (ROOT_DEPTH[source] ?? 0) ? "package" : "discovery";
}

export interface HomeWatcherOptions {
  home: string;
  log: Logger;
  debounceMs: number;
  /** 0 disables the periodic scan. */
  pollMs: number;
  /** Arm `fs.watch` triggers (false: periodic scan only). */
  fsWatch: boolean;
  /** Entries of one package read per scan (default `DEFAULT_MAX_PACKAGE_ENTRIES`). */
  maxPackageEntries?: number;
  /** Rebuilds the registry. */
  onChange(): Promise<void>;
  /** Called once per burst of changes, only while attached. */
  notify(): void;
  isAttached(): boolean;
}

/** The tree as scopes, by path. */
type Tree = Map<string, Scope>;

export class HomeWatcher {
  private tree: Tree = new Map();
  /** Directory → the scope it belongs to. */
  private owners = new Map<string, string>();
  private watchers = new Map<string, FSWatcher>();
  /** Directories whose watch fired since the last scan; `all` after a poll saw a change. */
  private dirty: Set<string> | "all" = new Set();
  private timer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  private readonly maxPackageEntries: number;

  constructor(private readonly o: HomeWatcherOptions) {
    this.maxPackageEntries = o.maxPackageEntries ?? DEFAULT_MAX_PACKAGE_ENTRIES;
  }

  /** Takes the initial digests (no notification) and arms the triggers. */
  async start(): Promise<void> {
    this.adopt(await this.scanAll());
    if (this.o.pollMs > 0) {
      this.schedulePoll(this.o.pollMs);
    }
  }

  /** Resolves once no debounce timer is pending and no scan is running. */
  whenIdle(): Promise<void> {
    if (!this.timer && !this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A change was observed (or is suspected): (re)start the debounce timer. */
  trigger(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.o.debounceMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.poller) clearTimeout(this.poller);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.running;
    this.settle();
  }

  /** Every scope of the home, from the three sources down. */
  private async scanAll(): Promise<Tree> {
    const tree: Tree = new Map();
    const budget: ScanBudget = { left: MAX_TREE_ENTRIES };
    const slices = new Slices();
    for (const source of SOURCES) {
      await this.scanSubtree(tree, join(this.o.home, source), 1, source, budget, slices);
    }
    if (budget.left <= 0) {
      this.o.log.warn(
        { home: this.o.home, maxEntries: MAX_TREE_ENTRIES },
        "skill home has more entries than one scan reads: changes past them go unnoticed",
      );
    }
    return tree;
  }

  /** The scope at `path` and every scope below it, into `tree`. */
  private async scanSubtree(
    tree: Tree,
    path: string,
    depth: number,
    source: string,
    budget: ScanBudget,
    slices: Slices,
  ): Promise<void> {
    const stack: [string, number][] = [[path, depth]];
    while (stack.length > 0) {
      const [p, d] = stack.pop()!;
      const scope = await scanScope(
        p,
        kindAt(d, source),
        d,
        source,
        this.maxPackageEntries,
        budget,
        slices,
      );
      tree.set(p, scope);
      for (const child of scope.children.keys()) stack.push([child, d + 1]);
    }
  }

  /**
   * Rescans the scopes of the dirty directories into a copy of the tree: each such scope, the
   * subtrees of its children that appeared or whose entry changed, and no subtree of those gone.
   * Returns the new tree and whether anything differs.
   */
  private async scanDirty(dirty: Set<string>): Promise<{ tree: Tree; changed: boolean }> {
    const tree: Tree = new Map(this.tree);
    const budget: ScanBudget = { left: MAX_TREE_ENTRIES };
    const slices = new Slices();
    let changed = false;
    const scopes = new Set<string>();
    for (const dir of dirty) {
      const owner = this.owners.get(dir);
      if (owner !== undefined) scopes.add(owner);
    }
    for (const path of scopes) {
      const old = tree.get(path);
      if (!old) continue; // removed by an earlier scope's rescan in this pass
      const scope = await scanScope(
        path,
        old.kind,
        old.depth,
        old.source,
        this.maxPackageEntries,
        budget,
        slices,
      );
      tree.set(path, scope);
      if (scope.digest !== old.digest) changed = true;
      for (const [child, line] of old.children) {
        if (scope.children.get(child) !== line) removeSubtree(tree, child);
      }
      for (const [child, line] of scope.children) {
        if (old.children.get(child) === line && tree.has(child)) continue;
        changed = true;
        await this.scanSubtree(tree, child, old.depth + 1, old.source, budget, slices);
      }
    }
    return { tree, changed };
  }

  /** Makes `tree` the current state: caps logged on change, directories watched. */
  private adopt(tree: Tree): void {
    for (const scope of tree.values()) {
      const before = this.tree.get(scope.path)?.capped ?? false;
      if (scope.capped && !before) {
        this.o.log.warn(
          { package: scope.path, maxEntries: this.maxPackageEntries },
          "skill package has more entries than a scan reads: only its first entries are watched for changes (--skill-watch-entries raises the cap)",
        );
      } else if (!scope.capped && before) {
        this.o.log.info({ package: scope.path }, "skill package is watched whole again");
      }
    }
    this.tree = tree;
    const owners = new Map<string, string>();
    for (const scope of tree.values()) for (const dir of scope.dirs) owners.set(dir, scope.path);
    this.owners = owners;
    this.syncWatchers();
  }

  /** Polls again after `ms`; the period stretches so a scan never costs more than ~2 % time. */
  private schedulePoll(ms: number): void {
    if (this.closed) return;
    this.poller = setTimeout(() => void this.poll(), ms);
  }

  private async poll(): Promise<void> {
    const started = performance.now();
    if (!this.timer && !this.running && !this.closed) {
      try {
        const tree = await this.scanAll();
        if (!this.closed && !sameTree(tree, this.tree)) {
          this.dirty = "all";
          this.trigger();
        }
      } catch (err) {
        this.o.log.warn({ err }, "skill home poll failed");
      }
    }
    this.schedulePoll(Math.max(this.o.pollMs, 50 * (performance.now() - started)));
  }

  private async flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.rescan();
    await this.running;
    this.running = undefined;
    if (this.again && !this.closed) {
      this.again = false;
      this.trigger();
    }
    this.settle();
  }

  private async rescan(): Promise<void> {
    const dirty = this.dirty;
    this.dirty = new Set();
    try {
      let tree: Tree;
      let changed: boolean;
      if (dirty === "all") {
        tree = await this.scanAll();
        changed = !sameTree(tree, this.tree);
      } else {
        ({ tree, changed } = await this.scanDirty(dirty));
      }
      if (this.closed) return;
      this.adopt(tree);
      if (!changed) return;
      await this.o.onChange();
      if (!this.closed && this.o.isAttached()) this.o.notify();
    } catch (err) {
      this.o.log.error({ err }, "skill home rescan failed");
    }
  }

  private settle(): void {
    if (this.timer || this.running) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** A watched directory changed: its scope is rescanned (the home itself: everything). */
  private changed(dir: string): void {
    if (dir === this.o.home) this.dirty = "all";
    else if (this.dirty !== "all") this.dirty.add(dir);
    this.trigger();
  }

  private syncWatchers(): void {
    if (!this.o.fsWatch) return;
    const want = new Set([this.o.home, ...this.owners.keys()]);
    for (const [dir, w] of this.watchers) {
      if (!want.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of want) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, () => this.changed(dir));
        w.on("error", () => {
          w.close();
          this.watchers.delete(dir);
        });
        this.watchers.set(dir, w);
      } catch {
        /* vanished or not watchable: the poll covers it */
      }
    }
  }
}

/** Removes the scope at `path` and every scope below it. */
function removeSubtree(tree: Tree, path: string): void {
  const stack = [path];
  while (stack.length > 0) {
    const p = stack.pop()!;
    const scope = tree.get(p);
    if (!scope) continue;
    tree.delete(p);
    stack.push(...scope.children.keys());
  }
}

function sameTree(a: Tree, b: Tree): boolean {
  if (a.size !== b.size) return false;
  for (const [path, scope] of a) {
    if (b.get(path)?.digest !== scope.digest) return false;
  }
  return true;
}
