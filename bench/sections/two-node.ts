/**
 * Section twoNode (scale-out over Redis, server/redis/README.md): what crossing the Redis bus costs. The same pull (same resource,
 * chunk size, window and carriage, every whole read verified by sha256) in three placements:
 * - `memory`:   one in-memory Server (the default mode), Agent and Computer on it;
 * - `redisOne`: Server node A of a Redis cluster, Agent and Computer both on A (bytes never
 *               touch the bus; only the registry lookup per request does);
 * - `cross`:    Agent on node A, Computer on node B: every request and every chunk ack crosses
 *               Redis (publish + deliver, msgpack).
 * Every point runs once per round, rounds interleaved with a rotating order, and the report
 * keeps medians. CPU of each Server node and of redis-server is measured over each read.
 * Optionally, `concurrent` Agents pull at once in each placement (aggregate MB/s).
 * No redis-server on PATH: the section is skipped with a note (CI installs it).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_WINDOW,
} from "../../agent/pull.ts";
import { fileDigests, writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import { spawnChild, type Child } from "../lib/ipc.ts";
import { hasRedisServer, procCpuMs, startBenchRedis, type BenchRedis } from "../lib/redis.ts";
import { SkipSection, type Ctx } from "../lib/context.ts";
import { formatBytes, mbPerSec, median, percentile, spreadOf, type Spread } from "../lib/stats.ts";
import type { SdkReadArgs, SdkReadResult } from "../stack/agent-side.ts";
import {
  BENCH_TOKEN,
  requireStack,
  resourcePath,
  skillHome,
  SKILL,
  type HandleInfo,
} from "../stack/harness.ts";

type Carriage = "base64" | "binary";
export type Placement = "memory" | "redisOne" | "cross";

export const PLACEMENTS: Record<Placement, string> = {
  memory: "1 node, in-memory (default mode)",
  redisOne: "1 node of a Redis cluster (Agent and Computer on A)",
  cross: "2 nodes over Redis (Agent on A, Computer on B)",
};

/** CPU % of one core per process over a measurement (median over the rounds). */
export type CpuByRole = Record<string, number>;

export interface TwoNodePoint {
  placement: Placement;
  carriage: Carriage;
  chunkBytes: number;
  window: number;
  /** Agents pulling at once (1: the single-pull point). */
  agents: number;
  /** Aggregate MB/s of each round (whole reads; all Agents together). */
  perRoundMbps: number[];
  medianMbps: number;
  /** Chunk latency over every round, ms. */
  p50Ms: number;
  p99Ms: number;
  cpu: CpuByRole;
  /** Server CPU ms (all nodes together) and redis-server CPU ms per MB moved (medians). */
  serverCpuMsPerMb: number;
  redisCpuMsPerMb: number | null;
  /** The same two figures, every round. */
  serverCpuMsPerMbRounds: Spread;
  redisCpuMsPerMbRounds: Spread | null;
  verifiedReads: number;
}

export interface TwoNodeData {
  fileBytes: number;
  rounds: number;
  adapter: string;
  points: TwoNodePoint[];
  /** Median MB/s ratios per carriage and number of Agents. */
  ratios: Array<{
    carriage: Carriage;
    agents: number;
    crossVsOne: number;
    crossVsMemory: number;
    oneVsMemory: number;
    /** Server CPU per MB, cross (A + B) / one node (A). */
    serverCpuCrossVsOne: number;
  }>;
  notes: string[];
}

interface Seat {
  index: number;
  placement: Placement;
  slot: number;
  computer: string;
  handle: HandleInfo;
}

const SPAWN_TIMEOUT_MS = 180_000;

const DEFAULT_CHUNK: Record<Carriage, number> = {
  base64: DEFAULT_BASE64_CHUNK_BYTES,
  binary: DEFAULT_BINARY_CHUNK_BYTES,
};

export async function runTwoNode(ctx: Ctx): Promise<TwoNodeData> {
  requireStack();
  if (!hasRedisServer()) {
    throw new SkipSection(
      "redis-server is not on PATH, so the two-node point was not measured (Debian: apt-get install redis-server; CI's .ci/run installs it)",
    );
  }
  const plan = ctx.plan.twoNode;
  const name = "two-node.bin";
  const path = resourcePath(ctx, name);
  skillHome(ctx);
  writeContent(path, "two-node", plan.fileBytes);
  const source = fileDigests(path, 1 << 20);
  const slots = Math.max(1, plan.concurrent);

  const children: Child[] = [];
  let redis: BenchRedis | null = null;
  try {
    const redisDir = join(ctx.dataDir, "redis");
    mkdirSync(redisDir, { recursive: true });
    // Start-up (tsx) is the slow part: everything at once; whatever started is closed below.
    // Five tsx processes at once on a loaded 2-core CI box can take over a minute: wait longer
    // than spawnChild's default before calling it a failure.
    const fork = (n: string, script: string): Promise<Child> =>
      spawnChild(n, script, {}, SPAWN_TIMEOUT_MS);
    const [started, ...forked] = await Promise.allSettled([
      startBenchRedis(redisDir),
      fork("server-mem", "bench/procs/stack-server.ts"),
      fork("server-a", "bench/procs/stack-server.ts"),
      fork("server-b", "bench/procs/stack-server.ts"),
      fork("computer", "bench/procs/stack-computer.ts"),
      fork("agent", "bench/procs/agent.ts"),
    ]);
    if (started.status === "fulfilled") redis = started.value;
    for (const f of forked) if (f.status === "fulfilled") children.push(f.value);
    for (const f of [started, ...forked]) if (f.status === "rejected") throw f.reason;
    const r = redis!;
    ctx.log(`twoNode: redis-server and 5 processes up`);
    const [serverMem, serverA, serverB, computer, agent] = children as [
      Child,
      Child,
      Child,
      Child,
      Child,
    ];
    const prefix = `bench-${randomUUID().slice(0, 8)}`;
    const start = (c: Child, withRedis: boolean): Promise<{ url: string }> =>
      c.call<{ url: string }>("start", {
        maxHttpBufferSize: 1_000_000,
        token: BENCH_TOKEN,
        ...(withRedis ? { redis: { url: r.url, prefix } } : {}),
      });
    const [mem, a, b] = await Promise.all([
      start(serverMem, false),
      start(serverA, true),
      start(serverB, true),
    ]);
    const agentUrl: Record<Placement, string> = { memory: mem.url, redisOne: a.url, cross: a.url };
    const computerUrl: Record<Placement, string> = {
      memory: mem.url,
      redisOne: a.url,
      cross: b.url,
    };
    const run = randomUUID().slice(0, 8);
    const placements = Object.keys(PLACEMENTS) as Placement[];
    const offices = placements.flatMap((placement) =>
      Array.from({ length: slots }, (_, slot) => ({
        placement,
        slot,
        office: `tn-${run}-${placement}-${slot}`,
        computer: `tn-computer-${placement}-${slot}`,
      })),
    );
    // Computers first (one process for all), then the Agents (one process, one seat each).
    for (const placement of placements) {
      await computer.call("start", {
        url: computerUrl[placement],
        token: BENCH_TOKEN,
        skills: skillHome(ctx),
        stateDir: join(ctx.dataDir, "state"),
        maxHttpBufferSize: 1_000_000,
        maxSize: 4 * 1024 * 1024 * 1024,
        computers: offices
          .filter((o) => o.placement === placement)
          .map((o) => ({ name: o.computer, office: o.office })),
      });
    }
    const seats: Seat[] = [];
    for (const placement of placements) {
      const mine = offices.filter((o) => o.placement === placement);
      await agent.call("stack-connect", {
        url: agentUrl[placement],
        token: BENCH_TOKEN,
        agents: mine.map((o) => ({ office: o.office, computer: o.computer })),
      });
      for (const o of mine) {
        const index = seats.length;
        const handle = await agent.call<HandleInfo>("stack-handle", {
          agent: index,
          skill: SKILL,
          relPath: name,
        });
        if (handle.sha256 !== source.sha256 || handle.totalSize !== source.size) {
          throw new IntegrityError(
            `get_skill (${o.placement}) reported ${handle.sha256}/${handle.totalSize}, source is ${source.sha256}/${source.size}`,
          );
        }
        seats.push({ index, placement, slot: o.slot, computer: o.computer, handle });
      }
    }

    ctx.log(`twoNode: ${offices.length} offices joined (Computers and Agents connected)`);
    const procs: Array<{ role: string; child: Child }> = [
      { role: "agent", child: agent },
      { role: "computer", child: computer },
      { role: "serverMem", child: serverMem },
      { role: "serverA", child: serverA },
      { role: "serverB", child: serverB },
    ];
    const cases: Array<{ carriage: Carriage; agents: number }> = [
      ...plan.carriages.map((carriage) => ({ carriage, agents: 1 })),
      ...(plan.concurrent > 1 ? [{ carriage: "base64" as const, agents: plan.concurrent }] : []),
    ];
    /** One verified whole read by seat `s` with the SDK defaults of `carriage`. */
    const readArgs = (s: Seat, carriage: Carriage): SdkReadArgs => ({
      agent: s.index,
      handle: s.handle.handle,
      sha256: source.sha256,
      totalSize: source.size,
      durationMs: 0,
      reads: 1,
      raw: true,
      options: {
        binary: carriage === "binary",
        chunkBytes: DEFAULT_CHUNK[carriage],
        window: DEFAULT_WINDOW,
      },
    });
    const points: TwoNodePoint[] = [];
    for (const c of cases) {
      const acc = new Map<
        Placement,
        {
          mbps: number[];
          lat: number[];
          cpu: CpuByRole[];
          srv: number[];
          red: number[];
          reads: number;
        }
      >();
      for (const p of placements) {
        acc.set(p, { mbps: [], lat: [], cpu: [], srv: [], red: [], reads: 0 });
      }
      // Fresh Servers run their hot paths in the interpreter at first (bench/lib/warmup.ts): a few
      // unreported reads per placement, or the first rounds measure the JIT, not the relay.
      for (let w = 0; w < plan.warmUpReads; w++) {
        for (const placement of placements) {
          const mine = seats.filter((s) => s.placement === placement && s.slot < c.agents);
          const results = await Promise.all(
            mine.map((s) => agent.call<SdkReadResult>("sdk-read", readArgs(s, c.carriage))),
          );
          for (const v of results) ctx.ledger.add(v.requests, v.bytes, v.reads);
        }
      }
      // The concurrent case moves `agents` times the bytes per round: fewer rounds keep it cheap.
      const rounds = c.agents > 1 ? Math.min(plan.reps, 3) : plan.reps;
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < placements.length; k++) {
          const placement = placements[(k + round) % placements.length]!;
          const mine = seats.filter((s) => s.placement === placement && s.slot < c.agents);
          const before = await Promise.all(procs.map((p) => p.child.stats()));
          const redisBefore = procCpuMs(r.pid);
          const t0 = performance.now();
          const results = await Promise.all(
            mine.map((s) => agent.call<SdkReadResult>("sdk-read", readArgs(s, c.carriage))),
          );
          const wallMs = performance.now() - t0;
          const redisAfter = procCpuMs(r.pid);
          const after = await Promise.all(procs.map((p) => p.child.stats()));
          const bytes = results.reduce((x, v) => x + v.bytes, 0);
          for (const v of results) ctx.ledger.add(v.requests, v.bytes, v.reads);
          const cpuMs: Record<string, number> = {};
          procs.forEach((p, i) => {
            cpuMs[p.role] = (after[i]!.cpuMicros - before[i]!.cpuMicros) / 1000;
          });
          if (redisBefore !== null && redisAfter !== null) cpuMs.redis = redisAfter - redisBefore;
          const a0 = acc.get(placement)!;
          a0.reads += results.reduce((x, v) => x + v.reads, 0);
          a0.mbps.push(mbPerSec(bytes, wallMs / 1000));
          for (const v of results) a0.lat.push(...(v.samples ?? []));
          a0.cpu.push(
            Object.fromEntries(Object.entries(cpuMs).map(([k2, v]) => [k2, (100 * v) / wallMs])),
          );
          const serverMs =
            placement === "memory"
              ? (cpuMs.serverMem ?? 0)
              : (cpuMs.serverA ?? 0) + (cpuMs.serverB ?? 0);
          a0.srv.push(serverMs / (bytes / 1e6));
          if (cpuMs.redis !== undefined) a0.red.push(cpuMs.redis / (bytes / 1e6));
        }
      }
      for (const placement of placements) {
        const a0 = acc.get(placement)!;
        const lat = [...a0.lat].sort((x, y) => x - y);
        const roles = Object.keys(a0.cpu[0] ?? {});
        const p: TwoNodePoint = {
          placement,
          carriage: c.carriage,
          chunkBytes: DEFAULT_CHUNK[c.carriage],
          window: DEFAULT_WINDOW,
          agents: c.agents,
          perRoundMbps: a0.mbps,
          medianMbps: median(a0.mbps),
          p50Ms: percentile(lat, 50),
          p99Ms: percentile(lat, 99),
          cpu: Object.fromEntries(roles.map((k2) => [k2, median(a0.cpu.map((x) => x[k2] ?? 0))])),
          serverCpuMsPerMb: median(a0.srv),
          redisCpuMsPerMb: a0.red.length > 0 ? median(a0.red) : null,
          serverCpuMsPerMbRounds: spreadOf(a0.srv),
          redisCpuMsPerMbRounds: a0.red.length > 0 ? spreadOf(a0.red) : null,
          verifiedReads: a0.reads,
        };
        points.push(p);
        ctx.log(
          `twoNode ${c.carriage} ×${c.agents} ${placement}: median ${p.medianMbps.toFixed(1)} MB/s (${a0.mbps.map((x) => x.toFixed(0)).join(", ")}), p99 ${p.p99Ms.toFixed(1)} ms`,
        );
      }
    }
    const ratios = cases.map((c) => {
      const at = (pl: Placement): TwoNodePoint =>
        points.find(
          (p) => p.placement === pl && p.carriage === c.carriage && p.agents === c.agents,
        )!;
      const [m, one, cross] = [at("memory"), at("redisOne"), at("cross")];
      return {
        carriage: c.carriage,
        agents: c.agents,
        crossVsOne: cross.medianMbps / one.medianMbps,
        crossVsMemory: cross.medianMbps / m.medianMbps,
        oneVsMemory: one.medianMbps / m.medianMbps,
        serverCpuCrossVsOne: cross.serverCpuMsPerMb / one.serverCpuMsPerMb,
      };
    });
    return {
      fileBytes: source.size,
      rounds: plan.reps,
      adapter: "@socket.io/redis-adapter, classic Pub/Sub, publishOnSpecificResponseChannel",
      points,
      ratios,
      notes: [
        `Every placement pulls ${formatBytes(source.size)} with the SDK (whole reads, each verified by sha256), SDK default chunk and window per carriage; ${plan.warmUpReads} unreported warm-up read(s) per placement first; rounds interleaved with a rotating placement order; MB/s and CPU are medians over ${plan.reps} rounds${plan.concurrent > 1 ? ` (${Math.min(plan.reps, 3)} with ${plan.concurrent} Agents at once)` : ""}, latency percentiles over every chunk of every round.`,
        "All processes share this machine's cores (Agent, Computer, three Servers, redis-server): absolute numbers are low and noisy; the ratios between placements measured in the same run are the result.",
      ],
    };
  } finally {
    for (const c of [...children].reverse()) await c.close();
    await redis?.stop();
  }
}
