/**
 * The SKILL service: wires the home, the registry, the handlers, the `skill` Producer and the
 * watcher into one `ComputerService` for the Computer core (`computer/computer.ts`).
 */
import { chmod, mkdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { busy, internalError, type ErrorPayload } from "@a2c-smcp/protocol";
import { DerivedStore } from "../blob/derived.ts";
import { HashCache } from "../blob/hash-cache.ts";
import type { ComputerConfig, ComputerService, HandleMinter } from "../contracts.ts";
import type { SandboxCheckCounter } from "../metrics.ts";
import { HashBusyError } from "../workers/pool.ts";
import { getSkill, getSkills, type SkillDeps } from "./get-skill.ts";
import { RegistryBuilder, type SkillRegistry } from "./registry.ts";
import { skillMdLimits } from "./resource.ts";
import { SkillSandbox } from "./sandbox.ts";
import { HomeWatcher } from "./watcher.ts";

export interface SkillServiceOptions {
  config: ComputerConfig;
  /** The skill home (`--skills DIR` / `A2C_SKILLS_DIR`); created 0700 when missing. */
  home: string;
  minter: HandleMinter;
  log: Logger;
  /** Live updates (default on). `false` = build the registry once (refresh() still works). */
  watch?: boolean;
  /** Quiet time that ends a burst of edits (default 300 ms, as the reference SDK). */
  debounceMs?: number;
  /** Safety-net signature scan period (default 5000 ms; 0 = none). */
  pollMs?: number;
  /** Use `fs.watch` triggers (default true); `false` leaves only the periodic scan. */
  fsWatch?: boolean;
  /** Entries of one package read per change scan (default 10,000; watcher.ts, D58). */
  watchEntries?: number;
  /** Called after each watcher-driven registry rebuild (attached or not). */
  onRefresh?: () => void;
  /**
   * The engine's `HashCache`: shares mint-time hashes with pull time (one hash per content).
   * Without it the service hashes with a cache of its own.
   */
  fileHasher?: HashCache;
  /**
   * The Computer's store of derived SKILL.md bodies (its pool and hash cache). Without it the
   * service opens one of its own in `<stateDir>/derived`, deriving on the main thread.
   */
  derived?: DerivedStore;
  /** The engine's settle window, when not the default (tests). */
  settleMs?: number;
  /** The Computer's `a2c_computer_sandbox_checks_total` (pull-time checks by path). */
  sandboxChecks?: SandboxCheckCounter;
}

export interface SkillService extends ComputerService {
  /** Absolute skill home. */
  readonly home: string;
  /** Where SKILL.md bodies are derived and kept (diagnostics, tests). */
  readonly derived: DerivedStore;
  /** The current registry. */
  registry(): SkillRegistry;
  /** Rebuilds the registry now (no notification). */
  refresh(): Promise<void>;
  /** Resolves once the watcher has no pending or running rescan. */
  whenIdle(): Promise<void>;
}

/**
 * Creates the home when missing, private to its user (mode 0700, as the protocol recommends).
 * An existing home is left as the operator made it, with a WARN if others can read it.
 */
async function ensureHome(home: string, log: Logger): Promise<void> {
  let existed = true;
  try {
    if (!(await stat(home)).isDirectory()) throw new Error(`skill home ${home} is not a directory`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    existed = false;
  }
  if (!existed) {
    await mkdir(home, { recursive: true, mode: 0o700 });
    await chmod(home, 0o700); // mkdir's mode is filtered by the umask
  } else if (((await stat(home)).mode & 0o077) !== 0) {
    log.warn({ home }, "skill home is readable by other users; it should be mode 0700");
  }
  for (const sub of ["user", "marketplace", "mcp"]) {
    await mkdir(join(home, sub), { recursive: true, mode: 0o700 });
  }
}

export async function createSkillService(opts: SkillServiceOptions): Promise<SkillService> {
  const home = resolve(opts.home);
  const log = opts.log.child({ component: "skills" });
  await ensureHome(home, log);
  const builder = new RegistryBuilder(home, log, opts.config);
  // The registry the last scan built; a rebuild replaces it (the producer reads it per pull).
  const live = { registry: await builder.build() };
  log.info({ home, skills: live.registry.entries.length }, "skill registry built");
  let notifyFn: ((event: "server:update_skills") => void) | undefined;
  const hashes = opts.fileHasher ?? new HashCache({ pool: null });
  const derived =
    opts.derived ??
    (await DerivedStore.open({
      dir: join(opts.config.stateDir, "derived"),
      hashes,
      pool: null,
      log,
      ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}),
    }));
  // One check of a name and a rel_path, at mint (get_skill) and on every pull (the producer).
  const sandbox = new SkillSandbox({
    live,
    derived,
    limits: skillMdLimits(opts.config),
    policy: opts.config,
    sandboxChecks: opts.sandboxChecks,
  });
  const deps: SkillDeps = {
    config: opts.config,
    minter: opts.minter,
    derived,
    registry: () => live.registry,
    sandbox,
    fileHasher: hashes,
    ...(opts.settleMs !== undefined ? { settleMs: opts.settleMs } : {}),
  };
  // Rebuilds are serialized, so an older scan can never replace a newer registry.
  let building: Promise<void> = Promise.resolve();
  const rebuild = async () => {
    live.registry = await builder.build();
    log.debug({ skills: live.registry.entries.length }, "skill registry rebuilt");
  };
  const refresh = (): Promise<void> => (building = building.then(rebuild, rebuild));
  const watcher =
    opts.watch === false
      ? undefined
      : new HomeWatcher({
          home,
          log,
          debounceMs: opts.debounceMs ?? 300,
          pollMs: opts.pollMs ?? 5000,
          fsWatch: opts.fsWatch ?? true,
          ...(opts.watchEntries !== undefined ? { maxPackageEntries: opts.watchEntries } : {}),
          onChange: async () => {
            await refresh();
            opts.onRefresh?.();
          },
          isAttached: () => notifyFn !== undefined,
          notify: () => {
            log.info("skill set changed: server:update_skills");
            notifyFn?.("server:update_skills");
          },
        });
  await watcher?.start();

  /**
   * Unexpected I/O errors become a 500, logged; a bad request never crashes the Computer. A full
   * hash lane (workers/pool.ts, D59) is `busy`: it passes, the Agent retries.
   */
  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T | ErrorPayload> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof HashBusyError) return busy(err.message);
      log.error({ err }, `${what} failed`);
      return internalError();
    }
  };

  return {
    home,
    derived,
    handlers: {
      "client:get_skills": (req) => guard("get_skills", () => getSkills(req, deps)),
      "client:get_skill": (req) => guard("get_skill", () => getSkill(req, deps)),
    },
    producers: [sandbox],
    attach(notify) {
      notifyFn = notify;
    },
    detach() {
      notifyFn = undefined;
    },
    registry: () => live.registry,
    refresh,
    whenIdle: () => watcher?.whenIdle() ?? Promise.resolve(),
    async close() {
      notifyFn = undefined;
      await watcher?.close();
    },
  };
}
