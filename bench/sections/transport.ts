/**
 * Section transport: what each departure from the libraries' stock behaviour buys, measured in
 * one run. The same SDK-default transfer (whole pulls, every one verified by sha256, and uploads,
 * every landed file verified by sha256) per direction and carriage through stacks that differ only
 * in their transport:
 * - `default`: every role as shipped by us (every fast path on);
 * - `default again`: the same, through a Server process of its own: its ratios are what two
 *   identical stacks differ by in the run, the spread a fast path's gain must stand above;
 * - `stock`: Server, Computer and Agent on the stock transport (socket.io, engine.io, ws and
 *   socket.io-client as shipped);
 * - `without <name>`: the default Server without that one fast path (the others default);
 * - `without computer <name>`: the default Computer without that one fast path (the Server
 *   default);
 * - `without agent <name>`: the Agent's clients without that fast path (Server and Computer
 *   default).
 * Each configuration has its own Server process; one Computer process holds every
 * configuration's Computers, the stock one too (a fast path patches its own Computer's objects
 * only), so a Computer CPU ratio compares code, not processes, as the Agent's does. Rounds run
 * every configuration once, in a rotating order, so all see the same machine; ratios are per
 * round against that round's default, then the median. Beside MB/s: Server, Computer and Agent
 * CPU ms per MB moved (the Agent process holds the probe Agent too), and the chunk latency of a
 * second Agent's small window-1 pull through the same Server meanwhile (another client's
 * requests while one pulls or uploads).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_WINDOW,
} from "../../agent/pull.ts";
import {
  DEFAULT_BASE64_UPLOAD_CHUNK_BYTES,
  DEFAULT_BINARY_UPLOAD_CHUNK_BYTES,
  DEFAULT_UPLOAD_WINDOW,
} from "../../agent/upload.ts";
import {
  AGENT_FAST_PATH_NAMES,
  type AgentFastPaths,
  type AgentTransport,
} from "../../agent/transport.ts";
import { FAST_PATH_NAMES, type TransportOption } from "../../server/transport/index.ts";
import {
  FAST_PATHS as COMPUTER_FAST_PATHS,
  type TransportMode,
} from "../../computer/transport/index.ts";
import { expectLanded } from "../lib/cli.ts";
import { fileDigests, writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import { spawnChild, type Child } from "../lib/ipc.ts";
import type { Ctx } from "../lib/context.ts";
import type { TransportCase } from "../lib/plan.ts";
import { rotatingRounds } from "../lib/measure.ts";
import { KiB, formatBytes, mbPerSec, median, percentile } from "../lib/stats.ts";
import type {
  SdkReadArgs,
  SdkReadResult,
  SdkUploadArgs,
  SdkUploadResult,
} from "../stack/agent-side.ts";
import {
  BENCH_TOKEN,
  SKILL,
  requireStack,
  resourcePath,
  skillHome,
  type HandleInfo,
} from "../stack/harness.ts";

export interface TransportConfig {
  id: string;
  server: TransportOption;
  computer: TransportMode;
  /** The `transport` of this configuration's AgentClients (the bulk one and the probe). */
  agent: AgentTransport;
}

export interface TransportPoint {
  config: string;
  /** `get`: an SDK pull; `put`: an SDK upload of the same file. */
  direction: TransportCase["direction"];
  carriage: TransportCase["carriage"];
  chunkBytes: number;
  perRoundMbps: number[];
  medianMbps: number;
  serverCpuMsPerMb: number;
  computerCpuMsPerMb: number;
  /** The Agent process's: the bulk Agent's transfer and the probe Agent's pulls beside it. */
  agentCpuMsPerMb: number;
  /** Medians over the rounds of this round's value / the default's in the same round. */
  mbpsVsDefault: number;
  serverCpuVsDefault: number;
  computerCpuVsDefault: number;
  agentCpuVsDefault: number;
  /** The other Agent's window-1 chunk latency during the pulls or uploads, ms. */
  probeP50Ms: number;
  probeP99Ms: number;
  probeP99VsDefault: number;
}

export interface TransportData {
  fileBytes: number;
  probeChunkBytes: number;
  rounds: number;
  configs: TransportConfig[];
  points: TransportPoint[];
  notes: string[];
}

const PROBE_CHUNK = 16 * KiB;
const SPAWN_TIMEOUT_MS = 180_000;

/**
 * The configurations: default, default again (the spread of two identical stacks), stock, and
 * the default without each fast path of the Server, of the Computer and of the Agent.
 */
export function transportConfigs(): TransportConfig[] {
  // The Agent's switch is all or nothing: "stock" is the Agent without its fast path only while
  // it has one. A second one needs a per-path switch in the SDK before it can be measured apart.
  if (AGENT_FAST_PATH_NAMES.length !== 1) {
    throw new Error("the Agent's transport has no per-path switch for its fast paths");
  }
  return [
    { id: "default", server: "fast", computer: "fast", agent: "fast" },
    { id: "default again", server: "fast", computer: "fast", agent: "fast" },
    { id: "stock", server: "stock", computer: "stock", agent: "stock" },
    ...FAST_PATH_NAMES.map((name): TransportConfig => ({
      id: `without ${name}`,
      server: { off: [name] },
      computer: "fast",
      agent: "fast",
    })),
    ...COMPUTER_FAST_PATHS.map(({ name }): TransportConfig => ({
      id: `without computer ${name}`,
      server: "fast",
      computer: { off: [name] },
      agent: "fast",
    })),
    ...AGENT_FAST_PATH_NAMES.map((name): TransportConfig => ({
      id: `without agent ${name}`,
      server: "fast",
      computer: "fast",
      agent: "stock",
    })),
  ];
}

interface Placed {
  config: TransportConfig;
  server: Child;
  computer: Child;
  bulk: { index: number; handle: HandleInfo };
  probe: { index: number; handle: HandleInfo };
}

export async function runTransport(ctx: Ctx): Promise<TransportData> {
  requireStack();
  const { fileBytes, rounds, warmUp, cases, probeLeastMs } = ctx.plan.transport;
  skillHome(ctx);
  const bulkPath = resourcePath(ctx, "transport.bin");
  writeContent(bulkPath, "transport", fileBytes);
  const source = { path: bulkPath, ...fileDigests(bulkPath, 1 << 20) };
  const landingRoot = join(ctx.dataDir, "transport-landing");
  writeContent(resourcePath(ctx, "transport-probe.bin"), "transport-probe", 256 * KiB);
  const configs = transportConfigs();

  const children: Child[] = [];
  try {
    const fork = (n: string, script: string): Promise<Child> =>
      spawnChild(n, script, {}, SPAWN_TIMEOUT_MS);
    const forked = await Promise.allSettled([
      ...configs.map((c) => fork(`server-${c.id}`, "bench/procs/stack-server.ts")),
      fork("computer", "bench/procs/stack-computer.ts"),
      fork("agent", "bench/procs/agent.ts"),
    ]);
    for (const f of forked) if (f.status === "fulfilled") children.push(f.value);
    for (const f of forked) if (f.status === "rejected") throw f.reason;
    const servers = children.slice(0, configs.length);
    const [computer, agent] = children.slice(configs.length) as [Child, Child];
    const urls = await Promise.all(
      configs.map((c, i) =>
        servers[i]!.call<{ url: string }>("start", {
          maxHttpBufferSize: 1_000_000,
          token: BENCH_TOKEN,
          transport: c.server,
        }),
      ),
    );
    const run = randomUUID().slice(0, 8);
    /** What each configuration's AgentClients report (`client.fastPaths`), for the notes. */
    const agentPaths = new Map<string, AgentFastPaths | null>();
    const placed: Placed[] = [];
    for (const [i, config] of configs.entries()) {
      const offices = ["bulk", "probe"].map((role) => ({
        office: `tr-${run}-${i}-${role}`,
        name: `tr-computer-${i}-${role}`,
      }));
      await computer.call("start", {
        url: urls[i]!.url,
        token: BENCH_TOKEN,
        skills: skillHome(ctx),
        stateDir: join(ctx.dataDir, "state"),
        maxHttpBufferSize: 1_000_000,
        maxSize: 4 * 1024 * 1024 * 1024,
        landingRoot,
        uploadMaxBytes: 4 * 1024 * 1024 * 1024,
        transport: config.computer,
        computers: offices.map((o) => ({ name: o.name, office: o.office })),
      });
      const first = placed.length * 2;
      const connected = await agent.call<{ fastPaths: AgentFastPaths | null }>("stack-connect", {
        url: urls[i]!.url,
        token: BENCH_TOKEN,
        agents: offices.map((o) => ({ office: o.office, computer: o.name })),
        transport: config.agent,
      });
      agentPaths.set(config.id, connected.fastPaths);
      const handle = (index: number, relPath: string): Promise<HandleInfo> =>
        agent.call<HandleInfo>("stack-handle", { agent: index, skill: SKILL, relPath });
      const bulk = { index: first, handle: await handle(first, "transport.bin") };
      const probe = { index: first + 1, handle: await handle(first + 1, "transport-probe.bin") };
      if (bulk.handle.sha256 !== source.sha256 || bulk.handle.totalSize !== source.size) {
        throw new IntegrityError(`get_skill (${config.id}) reported another sha256 or size`);
      }
      placed.push({ config, server: servers[i]!, computer, bulk, probe });
    }
    ctx.log(`transport: ${configs.length} configurations up`);

    const points: TransportPoint[] = [];
    for (const tc of cases) {
      const { direction, carriage, chunkBytes } = tc;
      const probeArgs = (p: Placed, durationMs: number): SdkReadArgs => ({
        agent: p.probe.index,
        handle: p.probe.handle.handle,
        sha256: p.probe.handle.sha256,
        totalSize: p.probe.handle.totalSize,
        durationMs,
        raw: true,
        options: { binary: carriage === "binary", chunkBytes: PROBE_CHUNK, window: 1 },
      });
      const lastMs = new Map<string, number>();
      const label = caseLabel(tc);
      const one = async (p: Placed) => {
        // The Agent process holds every configuration's clients; one transfer runs at a time.
        const procs = [p.server, p.computer, agent];
        const before = await Promise.all(procs.map((c) => c.stats()));
        const t0 = performance.now();
        // The probe spans most of the transfer (this configuration's last time); beside the
        // first transfer only its least time, whatever the file's size.
        const probeMs = Math.max(probeLeastMs, 0.8 * (lastMs.get(p.config.id) ?? 0));
        const [bulk, probe] = await Promise.all([
          bulkTransfer(agent, p, tc, source),
          agent.call<SdkReadResult>("sdk-read", probeArgs(p, probeMs)),
        ]);
        const wallMs = performance.now() - t0;
        const after = await Promise.all(procs.map((c) => c.stats()));
        // After the CPU figures: the check reads the landed file in this process.
        if (bulk.landingPath !== null) await expectLanded(bulk.landingPath, source.sha256);
        ctx.ledger.add(
          bulk.requests + probe.requests,
          bulk.bytes + probe.bytes,
          bulk.transfers + probe.reads,
        );
        lastMs.set(p.config.id, bulk.seconds * 1000);
        const mb = bulk.bytes / 1e6;
        const cpu = (k: number): number => (after[k]!.cpuMicros - before[k]!.cpuMicros) / 1000 / mb;
        return {
          mbps: mbPerSec(bulk.bytes, wallMs / 1000),
          server: cpu(0),
          computer: cpu(1),
          agent: cpu(2),
          probe: probe.samples ?? [],
        };
      };
      // Fresh processes run their hot paths in the interpreter first: one unreported transfer
      // each, where the figures are read (the full plan).
      if (warmUp) for (const p of placed) await one(p);
      const acc = await rotatingRounds(
        rounds,
        placed.map((p) => ({ id: p.config.id })),
        (i) => one(placed[i]!),
      );
      const base = acc.get("default")!;
      for (const p of placed) {
        const mine = acc.get(p.config.id)!;
        const vs = (f: (r: (typeof mine)[number]) => number): number =>
          median(mine.map((r, i) => f(r) / f(base[i]!)));
        const lat = mine.flatMap((r) => r.probe).sort((a, b) => a - b);
        const baseLat = base.flatMap((r) => r.probe).sort((a, b) => a - b);
        const point: TransportPoint = {
          config: p.config.id,
          direction,
          carriage,
          chunkBytes,
          perRoundMbps: mine.map((r) => r.mbps),
          medianMbps: median(mine.map((r) => r.mbps)),
          serverCpuMsPerMb: median(mine.map((r) => r.server)),
          computerCpuMsPerMb: median(mine.map((r) => r.computer)),
          agentCpuMsPerMb: median(mine.map((r) => r.agent)),
          mbpsVsDefault: vs((r) => r.mbps),
          serverCpuVsDefault: vs((r) => r.server),
          computerCpuVsDefault: vs((r) => r.computer),
          agentCpuVsDefault: vs((r) => r.agent),
          probeP50Ms: percentile(lat, 50),
          probeP99Ms: percentile(lat, 99),
          probeP99VsDefault: percentile(lat, 99) / percentile(baseLat, 99),
        };
        points.push(point);
        ctx.log(
          `transport ${label} ${p.config.id}: ${point.medianMbps.toFixed(1)} MB/s (×${point.mbpsVsDefault.toFixed(2)}), Server ${point.serverCpuMsPerMb.toFixed(2)} ms/MB (×${point.serverCpuVsDefault.toFixed(2)}), Agent ${point.agentCpuMsPerMb.toFixed(2)} ms/MB (×${point.agentCpuVsDefault.toFixed(2)}), probe p99 ${point.probeP99Ms.toFixed(1)} ms`,
        );
      }
    }
    const listed = (d: TransportCase["direction"]): string =>
      cases
        .filter((c) => c.direction === d)
        .map((c) => `${c.carriage} ${formatBytes(c.chunkBytes)}`)
        .join(", ");
    const puts = listed("put");
    return {
      fileBytes: source.size,
      probeChunkBytes: PROBE_CHUNK,
      rounds,
      configs,
      points,
      notes: [
        `Each configuration pulls ${formatBytes(source.size)} with window ${DEFAULT_WINDOW} at ${listed("get")} (the SDK's defaults: ${formatBytes(DEFAULT_BINARY_CHUNK_BYTES)} binary, ${formatBytes(DEFAULT_BASE64_CHUNK_BYTES)} base64), one verified whole read per round${warmUp ? " after one unreported warm-up read" : ""}; ${rounds} rounds, configurations in a rotating order; ratios are per round against the default, then the median.`,
        ...(puts
          ? [
              `Each configuration also uploads the same file with uploadBlob at ${puts} (a chunk ceiling under the SDK's path controller, window ${DEFAULT_UPLOAD_WINDOW}; the SDK's defaults: ${formatBytes(DEFAULT_BINARY_UPLOAD_CHUNK_BYTES)} binary, ${formatBytes(DEFAULT_BASE64_UPLOAD_CHUNK_BYTES)} base64), timed from the call (the file hashed first) to the final ack, in the same rounds and order; the landed file is hashed and removed after the CPU figures are read.`,
            ]
          : []),
        `Meanwhile a second Agent on the same Server pulls a 256 KiB file in ${formatBytes(PROBE_CHUNK)} chunks, window 1: its chunk latency is the probe.`,
        "Agent CPU per MB is the Agent process's, per MB of the bulk transfer: the bulk Agent's pull or upload and the probe Agent's window-1 pulls beside it, both clients of the configuration in that one process. The probe's CPU dilutes the bulk Agent's own difference in the ratios, and grows with the time it runs (most of the transfer's).",
        agentPathsNote(configs, agentPaths),
        "Every process shares this machine's cores: read the ratios, measured side by side, not the absolute figures.",
      ],
    };
  } finally {
    for (const c of [...children].reverse()) await c.close();
    rmSync(landingRoot, { recursive: true, force: true });
  }
}

/** What the default's and each stock-Agent configuration's AgentClients reported. */
function agentPathsNote(
  configs: TransportConfig[],
  reported: Map<string, AgentFastPaths | null>,
): string {
  const each = configs
    .filter((c) => c.id === "default" || c.agent === "stock")
    .map((c) => {
      const paths = reported.get(c.id);
      return `${c.id}: ${AGENT_FAST_PATH_NAMES.map((n) => `${n} ${paths?.[n] ?? "unknown"}`).join(", ")}`;
    });
  return `The AgentClients' fast paths as they report them (\`client.fastPaths\`; the clients of \`stock\` and of a \`without agent\` configuration have \`transport: "stock"\`): ${each.join("; ")}.`;
}

/** "pull base64 64 KiB", "upload base64 64 KiB": how logs and the report name a case. */
export function caseLabel(c: TransportCase): string {
  return `${c.direction === "put" ? "upload" : "pull"} ${c.carriage} ${formatBytes(c.chunkBytes)}`;
}

interface Transferred {
  bytes: number;
  seconds: number;
  requests: number;
  transfers: number;
  /** Where an upload landed on the Computer (null: a pull). */
  landingPath: string | null;
}

/** One SDK-default transfer of the bulk file at `tc`: a verified whole pull, or an upload. */
async function bulkTransfer(
  agent: Child,
  p: Placed,
  tc: TransportCase,
  source: { path: string; sha256: string; size: number },
): Promise<Transferred> {
  const binary = tc.carriage === "binary";
  if (tc.direction === "put") {
    const r = await agent.call<SdkUploadResult>("sdk-upload", {
      agent: p.bulk.index,
      path: source.path,
      options: { binary, chunkBytes: tc.chunkBytes, window: DEFAULT_UPLOAD_WINDOW },
    } satisfies SdkUploadArgs);
    if (r.sha256 !== source.sha256 || r.totalSize !== source.size) {
      throw new IntegrityError(`upload (${p.config.id}) echoed another sha256 or size`);
    }
    return {
      bytes: r.totalSize,
      seconds: r.seconds,
      requests: r.requests,
      transfers: 1,
      landingPath: r.landingPath,
    };
  }
  const r = await agent.call<SdkReadResult>("sdk-read", {
    agent: p.bulk.index,
    handle: p.bulk.handle.handle,
    sha256: source.sha256,
    totalSize: source.size,
    durationMs: 0,
    reads: 1,
    options: { binary, chunkBytes: tc.chunkBytes, window: DEFAULT_WINDOW },
  } satisfies SdkReadArgs);
  return {
    bytes: r.bytes,
    seconds: r.seconds,
    requests: r.requests,
    transfers: r.reads,
    landingPath: null,
  };
}
