/**
 * The services a Computer runs (contracts.ts `ComputerService`): the blob engine's own, then the
 * configured ones, built from factories that get what a producer needs to mint and log. Their
 * producers register with the engine, and each `client:*` event gets exactly one handler.
 */
import type { Logger } from "pino";
import type { ClientEvent } from "@a2c-smcp/protocol";
import type { BlobEngine } from "./blob/engine.ts";
import type { DerivedStore } from "./blob/derived.ts";
import type { HashCache } from "./blob/hash-cache.ts";
import type { ClientHandler, ComputerConfig, ComputerService, HandleMinter } from "./contracts.ts";
import type { ComputerMetrics } from "./metrics.ts";
import { createSkillService, type SkillService } from "./skills/index.ts";
import { createToolService } from "./tools/service.ts";

/** What a service factory gets: everything a producer needs to mint and log. */
export interface ServiceContext {
  readonly config: ComputerConfig;
  readonly minter: HandleMinter;
  readonly log: Logger;
  readonly metrics: ComputerMetrics;
  /** The engine's hash cache, so producers hash a file once for mint and pull alike. */
  readonly hashCache?: HashCache;
  /** Derived resources (SKILL.md bodies), produced in the Computer's pool. */
  readonly derived?: DerivedStore;
}

export type ServiceFactory = (ctx: ServiceContext) => ComputerService | Promise<ComputerService>;

/** The options `defaultServices` reads (`StartComputerOptions` has them). */
export interface DefaultServiceOptions {
  /** Skill home (D20): the SKILL service. */
  skills?: string;
  /** Entries of one skill package read per change scan (skills/watcher.ts). */
  skillWatchEntries?: number;
  /** MCP servers config file: the tool service. */
  mcpConfig?: string;
}

/**
 * The SKILL service when `skills` is set, the tool service when `mcpConfig` is set (it stages
 * MCP `skill://` bundles into the skill home and asks the SKILL registry to rescan).
 */
export function defaultServices(options: DefaultServiceOptions): ServiceFactory[] {
  const factories: ServiceFactory[] = [];
  let skills: SkillService | undefined;
  if (options.skills !== undefined) {
    const home = options.skills;
    factories.push(async (ctx) => {
      skills = await createSkillService({
        config: ctx.config,
        home,
        minter: ctx.minter,
        log: ctx.log,
        sandboxChecks: ctx.metrics.sandboxChecks,
        ...(options.skillWatchEntries !== undefined
          ? { watchEntries: options.skillWatchEntries }
          : {}),
        ...(ctx.hashCache ? { fileHasher: ctx.hashCache } : {}),
        ...(ctx.derived ? { derived: ctx.derived } : {}),
      });
      return skills;
    });
  }
  if (options.mcpConfig !== undefined) {
    const mcpConfigPath = options.mcpConfig;
    factories.push((ctx) =>
      createToolService({
        config: ctx.config,
        mcpConfigPath,
        minter: ctx.minter,
        log: ctx.log,
        storageFaults: ctx.metrics,
        ...(options.skills !== undefined ? { skillsHome: options.skills } : {}),
        onSkillsChanged: () => {
          skills?.refresh().catch((err: unknown) => ctx.log.error({ err }, "skill rescan failed"));
        },
      }),
    );
  }
  return factories;
}

export interface RunningServices {
  readonly services: ComputerService[];
  readonly handlers: ReadonlyMap<ClientEvent, ClientHandler<ClientEvent>>;
}

/**
 * Builds `entries` after `first` (already running), registers every producer with `engine`, and
 * maps each event to its one handler. On failure everything built so far is closed.
 */
export async function startServices(
  first: readonly ComputerService[],
  entries: ReadonlyArray<ComputerService | ServiceFactory>,
  ctx: ServiceContext,
  engine: BlobEngine,
): Promise<RunningServices> {
  const services = [...first];
  const handlers = new Map<ClientEvent, ClientHandler<ClientEvent>>();
  try {
    for (const entry of entries) {
      services.push(typeof entry === "function" ? await entry(ctx) : entry);
    }
    for (const service of services) {
      for (const producer of service.producers) engine.register(producer);
      for (const [event, handler] of Object.entries(service.handlers)) {
        if (handlers.has(event as ClientEvent)) throw new Error(`two services handle ${event}`);
        handlers.set(event as ClientEvent, handler as ClientHandler<ClientEvent>);
      }
    }
  } catch (err) {
    await closeServices(services);
    throw err;
  }
  return { services, handlers };
}

/** Closes every service, whatever each one's close does. */
export async function closeServices(services: readonly ComputerService[]): Promise<void> {
  await Promise.allSettled(services.map((s) => s.close()));
}
