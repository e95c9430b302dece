/**
 * Starts our stack for a section: the Server in its own process, Computers (one per office) in one
 * or more Computer processes, and Agents (one per office, the protocol allows one Agent per
 * office) in one or more Agent processes. Resources are files of one skill package
 * (`<home>/user/bench-data/`), served through the real SKILL channel and blob engine.
 */
import { randomUUID } from "node:crypto";
import { chmodSync, mkdirSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { OUTBOUND_DEFAULTS } from "../../server/outbound.ts";
import { spawnChild, type Child } from "../lib/ipc.ts";
import { SkipSection, type Ctx } from "../lib/context.ts";
import { missingParts } from "./available.ts";

export const BENCH_TOKEN = `bench-${randomUUID()}`;
export const SKILL = "bench-data";

/** The skill home, with one package holding every bench resource. Created on first use. */
export function skillHome(ctx: Ctx): string {
  const home = join(ctx.dataDir, "home");
  const pkg = join(home, "user", SKILL);
  if (!existsSync(join(pkg, "SKILL.md"))) {
    mkdirSync(pkg, { recursive: true, mode: 0o700 });
    for (const d of [home, join(home, "user"), pkg]) chmodSync(d, 0o700);
    writeFileSync(
      join(pkg, "SKILL.md"),
      [
        "---",
        `name: ${SKILL}`,
        "description: Resources of the A2C benchmark",
        "---",
        "Bench data.",
      ].join("\n"),
    );
  }
  return home;
}

/** Absolute path of a resource inside the bench package. */
export function resourcePath(ctx: Ctx, name: string): string {
  return join(skillHome(ctx), "user", SKILL, name);
}

export interface Seat {
  child: Child;
  /** Index of this Agent inside its process. */
  index: number;
  /** Office number (seats are sorted by it, so the first N seats spread over the processes). */
  ordinal: number;
  office: string;
  computer: string;
}

export interface Stack {
  url: string;
  server: Child;
  computers: Child[];
  agents: Child[];
  seats: Seat[];
  /** Every process with its role, for withCosts(). */
  procs: Array<{ role: string; child: Child }>;
  /** Every office and its Computer, seated or not. */
  offices: Array<{ office: string; computer: string }>;
  close(): Promise<void>;
}

export interface StackOptions {
  maxHttpBufferSize: number;
  offices: number;
  computerProcs?: number;
  agentProcs?: number;
  workers?: number;
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
  /** Whether to connect Agents (section 7 only needs the Server). */
  withClients?: boolean;
  /**
   * How many offices (the first ones) get a connected Agent; default all. An office left
   * without one is where another Agent (the CLI) can join.
   */
  agentOffices?: number;
  /** Where the Computers' uploads land (`<dir>/<computer name>/`); unset: uploads forbidden. */
  landingRoot?: string;
  /** The Computers' largest upload (`client:put_blob`). */
  uploadMaxBytes?: number;
}

/**
 * The bench measures throughput, not the Server's memory bounds: an Agent of the sweep asks for
 * up to its window of chunks of up to maxHttpBufferSize each, which at 4 MB × 16 is the default
 * queued bound itself (and 8 times the unread one), and a request that would go over is refused
 * `busy` by design. So the bench's Server gets room for twice the largest window of the largest
 * answers, and one such window unread (the bare relay has no bound at all); at the SDK's
 * defaults these are the default bounds.
 */
function boundsFor(
  ctx: Ctx,
  maxHttpBufferSize: number,
): { maxQueuedBytes: number; maxUnreadBytes: number } {
  const windows = [...ctx.plan.windows, ...ctx.plan.bigBufferWindows];
  const window = Math.max(...windows) * maxHttpBufferSize;
  return {
    maxQueuedBytes: Math.max(OUTBOUND_DEFAULTS.maxQueuedBytes, 2 * window),
    maxUnreadBytes: Math.max(OUTBOUND_DEFAULTS.maxUnreadBytes, window),
  };
}

export function requireStack(): void {
  const missing = missingParts();
  if (missing.length > 0) throw new SkipSection(`not in this tree yet: ${missing.join(", ")}`);
}

export async function startStack(ctx: Ctx, o: StackOptions): Promise<Stack> {
  requireStack();
  const children: Child[] = [];
  const close = async (): Promise<void> => {
    for (const c of [...children].reverse()) await c.close();
  };
  try {
    // Process start-up (tsx) is the slow part on a busy machine: fork every process at once.
    const cp = Math.max(1, Math.min(o.computerProcs ?? 1, o.offices));
    const ap = Math.max(1, Math.min(o.agentProcs ?? 1, o.offices));
    const clients = o.withClients !== false;
    const spawned = await Promise.allSettled([
      spawnChild("server", "bench/procs/stack-server.ts"),
      ...(clients
        ? Array.from({ length: cp }, (_, p) =>
            spawnChild(`computer-${p}`, "bench/procs/stack-computer.ts"),
          )
        : []),
      ...(clients
        ? Array.from({ length: ap }, (_, p) => spawnChild(`agent-${p}`, "bench/procs/agent.ts"))
        : []),
    ]);
    for (const r of spawned) if (r.status === "fulfilled") children.push(r.value);
    for (const r of spawned) if (r.status === "rejected") throw r.reason;
    const server = children[0]!;
    const computerChildren = children.slice(1, 1 + (clients ? cp : 0));
    const agentChildren = children.slice(1 + (clients ? cp : 0));
    const { url } = await server.call<{ url: string }>("start", {
      maxHttpBufferSize: o.maxHttpBufferSize,
      ...boundsFor(ctx, o.maxHttpBufferSize),
      token: BENCH_TOKEN,
      pingIntervalMs: o.pingIntervalMs,
      pingTimeoutMs: o.pingTimeoutMs,
    });
    const stack: Stack = {
      url,
      server,
      computers: [],
      agents: [],
      seats: [],
      procs: [],
      offices: [],
      close,
    };
    if (!clients) {
      stack.procs.push({ role: "server", child: server });
      return stack;
    }
    const run = randomUUID().slice(0, 8);
    const offices = Array.from({ length: o.offices }, (_, i) => ({
      ordinal: i,
      office: `bench-${run}-office-${i}`,
      name: `bench-computer-${i}`,
    }));
    const home = skillHome(ctx);
    stack.offices.push(...offices.map((x) => ({ office: x.office, computer: x.name })));
    stack.computers.push(...computerChildren);
    await Promise.all(
      computerChildren.map((child, p) =>
        child.call("start", {
          url,
          token: BENCH_TOKEN,
          skills: home,
          stateDir: join(ctx.dataDir, "state"),
          maxHttpBufferSize: o.maxHttpBufferSize,
          maxSize: 4 * 1024 * 1024 * 1024,
          workers: o.workers,
          ...(o.landingRoot !== undefined ? { landingRoot: o.landingRoot } : {}),
          ...(o.uploadMaxBytes !== undefined ? { uploadMaxBytes: o.uploadMaxBytes } : {}),
          computers: offices
            .filter((_, i) => i % cp === p)
            .map((x) => ({ name: x.name, office: x.office })),
        }),
      ),
    );
    stack.agents.push(...agentChildren);
    const seated = offices.slice(0, o.agentOffices ?? offices.length);
    await Promise.all(
      agentChildren.map(async (child, p) => {
        const mine = seated.filter((_, i) => i % ap === p);
        await child.call("stack-connect", {
          url,
          token: BENCH_TOKEN,
          agents: mine.map((x) => ({ office: x.office, computer: x.name })),
        });
        mine.forEach((x, index) =>
          stack.seats.push({
            child,
            index,
            ordinal: x.ordinal,
            office: x.office,
            computer: x.name,
          }),
        );
      }),
    );
    stack.seats.sort((a, b) => a.ordinal - b.ordinal);
    stack.procs.push(
      ...stack.agents.map((child, i) => ({
        role: stack.agents.length > 1 ? `agent${i}` : "agent",
        child,
      })),
      { role: "server", child: server },
      ...stack.computers.map((child, i) => ({
        role: stack.computers.length > 1 ? `computer${i}` : "computer",
        child,
      })),
    );
    return stack;
  } catch (err) {
    await close();
    throw err;
  }
}

export interface HandleInfo {
  handle: string;
  sha256: string;
  totalSize: number;
  mimeType: string;
}

/** A handle for `name` through `client:get_skill`, minted by the seat's Computer. */
export function getHandle(seat: Seat, name: string): Promise<HandleInfo> {
  return seat.child.call<HandleInfo>("stack-handle", {
    agent: seat.index,
    skill: SKILL,
    relPath: name,
  });
}

const shared = new Map<string, Promise<Stack>>();

/**
 * A stack kept alive across sections that want the same configuration (the sweep's 1 MB stack is
 * reused by the Computer-cost and rewrite sections): process start-up is slow on a shared 2-core
 * machine. `closeSharedStacks()` ends them when the run is over.
 */
export function sharedStack(ctx: Ctx, o: StackOptions): Promise<Stack> {
  requireStack();
  const key = JSON.stringify(o);
  let s = shared.get(key);
  if (!s) {
    s = startStack(ctx, o);
    shared.set(key, s);
    s.catch(() => shared.delete(key));
  }
  return s;
}

export async function closeSharedStacks(): Promise<void> {
  const all = [...shared.values()];
  shared.clear();
  for (const s of all) {
    try {
      await (await s).close();
    } catch {
      // A stack that never started has nothing to close.
    }
  }
}
