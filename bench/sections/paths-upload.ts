/**
 * Uploads on the paths section's links (the upload link goals): SDK `uploadBlob` with default
 * options from agent-0 to computer-0,
 * - on an Agent uplink shaped to each rate, with and without a round trip (the packet delay line
 *   on the Agents' side), each beside a plain TCP flow from the Agent to the Server on the same
 *   path (the ceiling) and with the same Agent's small requests every 300 ms during it;
 * - to a Computer behind a slow downlink (the Agent's side unshaped), the Server's largest
 *   per-connection queue (its session meter, `a2c_outbound_largest_queue_bytes`) sampled all
 *   along: what the Server holds while the Agent could send far faster than the Computer takes,
 *   and its kernel's send queue toward the Computer beside it (what TCP holds for the process).
 * Every stored file is checked against the source's sha256, then removed.
 */
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import type { UploadRunResult } from "../../scripts/links/agent-driver.ts";
import type { Build, StackOnLinks } from "../../scripts/links/stack.ts";
import { run } from "../../scripts/links/system.ts";
import { queueDelta, type Direction, type Host } from "../../scripts/links/topology.ts";
import { writeContent, fileDigests } from "../lib/data.ts";
import { expectDigest } from "../lib/integrity.ts";
import type { PathsPlan } from "../lib/plan.ts";
import { bytesAt } from "../lib/progress.ts";
import { MiB, formatBytes } from "../lib/stats.ts";
import { latencyStats, type LatencyStats } from "./links.ts";
import {
  PROBE_MS,
  ceilingFlow,
  linkShares,
  setPath,
  withStack,
  type Ceiling,
  type St,
} from "./paths.ts";

type UploadPlan = NonNullable<PathsPlan["uploads"]>;

export interface UploadPathCase {
  id: string;
  build: string;
  direction: Extract<Direction, "agentUplink" | "computerDownlink">;
  rateMbit: number;
  rttMs: number;
  assetBytes: number;
  ceiling: Ceiling;
  loadAvg: number[];
  ok: boolean;
  error: string | null;
  seconds: number;
  carriage: string | null;
  /** Payload bits per second over the whole upload (hashing the source included). */
  bps: number;
  utilization: number;
  /** `bps` over the plain flow's rate past its slow start on the same path. */
  ofCeiling: number;
  /** Wire bytes on the shaped direction per payload byte. */
  wirePerPayloadByte: number;
  /** Packets the shaped direction's queue dropped during the upload (TCP sent them again). */
  drops: number;
  idle: LatencyStats;
  during: LatencyStats;
  /** The most the Server held queued for one connection while the upload ran (sampled). */
  serverHeldMaxBytes: number;
  serverHeldSamples: number;
  /** The most the Server's kernel held unsent or unacknowledged toward the Computer (`ss` Send-Q). */
  serverSendQMaxBytes: number;
  /** The same in the Agent's kernel toward the Server: what a small request queues behind. */
  agentSendQMaxBytes: number;
  /** Payload Mbit/s acknowledged in each second of the upload (its first hashes the source). */
  perSecondMbit: number[];
  /** The SDK's UploadStats. */
  stats: Record<string, number | boolean>;
}

/** The source of an upload of `bytes` (written once per size), and its sha256. */
function source(st: St, bytes: number): { path: string; sha256: string } {
  const path = join(st.work, `upload-src-${bytes}.bin`);
  const key = `upload:${bytes}`;
  if (!st.assets.has(key)) st.assets.set(key, writeContent(path, `paths-up-${bytes}`, bytes));
  return { path, sha256: st.assets.get(key)! };
}

/** Checks the stored file against the source, then removes it. */
function checkStored(st: St, src: { sha256: string }, up: UploadRunResult): void {
  if (!up.ok || !up.landingPath) return;
  try {
    expectDigest("paths: the Computer's echoed digest of an upload", up.sha256 ?? "", src.sha256);
    expectDigest(
      "paths: the stored upload",
      fileDigests(up.landingPath, 4 * MiB).sha256,
      src.sha256,
    );
    st.ctx.ledger.add(Number(up.stats.requests ?? 0), up.totalSize, 1);
  } finally {
    rmSync(up.landingPath, { force: true });
  }
}

/** Samples the Send-Q of `host`'s connections to `peer` every 100 ms until stopped; the most. */
function sendQueue(host: Host, peer: string): () => Promise<number> {
  let most = 0;
  let stopped = false;
  const loop = (async (): Promise<void> => {
    while (!stopped) {
      const out = await run("ip", [
        ...["netns", "exec", host.ns, "ss", "-tnH", "state", "established", "dst", peer],
      ]).catch(() => "");
      for (const line of out.split("\n")) {
        const sendQ = Number(line.trim().split(/\s+/)[1]);
        if (Number.isFinite(sendQ)) most = Math.max(most, sendQ);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return most;
  };
}

async function uploadRun(
  st: St,
  stack: StackOnLinks,
  c: Omit<
    UploadPathCase,
    keyof UploadRunStats | "build" | "loadAvg" | "idle" | "during" | "stats" | "carriage"
  >,
  idle: LatencyStats,
): Promise<UploadPathCase> {
  const a0 = stack.agents[0]!;
  const src = source(st, c.assetBytes);
  const loadAvg = loadavg();
  const c0 = await st.links.counters();
  const gauge = await stack.serverTool.gaugeStart(
    stack.metricsUrl,
    "a2c_outbound_largest_queue_bytes",
    100,
  );
  const links = st.links;
  const serverQ = sendQueue(links.server, links.computers[0]!.address);
  const agentQ = sendQueue(links.agents[0]!, links.server.addressForAgents);
  const probe = await a0.probeStart(PROBE_MS);
  const expected = (c.assetBytes * 8) / (c.rateMbit * 1e6);
  const up = await a0.upload({
    source: src.path,
    nameHint: `up-${st.seq++}.bin`,
    deadlineMs: Math.round((4 * expected + 60) * 1000),
  });
  const end = up.startedAt + up.seconds * 1000;
  const samples = (await a0.probeStop(probe)).filter((s) => s.at <= end);
  const held = await stack.serverTool.gaugeStop(gauge);
  const [serverSendQMaxBytes, agentSendQMaxBytes] = [await serverQ(), await agentQ()];
  const c1 = await st.links.counters();
  checkStored(st, src, up);
  return {
    ...c,
    build: stack.build.label,
    loadAvg,
    ok: up.ok,
    error: up.error,
    seconds: up.seconds,
    carriage: up.carriage,
    ...linkShares(c, up, queueDelta(c0[c.direction], c1[c.direction]), up.bytes || c.assetBytes),
    idle,
    during: latencyStats(samples),
    serverHeldMaxBytes: held.max,
    serverHeldSamples: held.samples,
    serverSendQMaxBytes,
    agentSendQMaxBytes,
    perSecondMbit: Array.from({ length: Math.ceil(up.seconds) }, (_, i) => {
      const bytes = bytesAt(up.progress, (i + 1) * 1000) - bytesAt(up.progress, i * 1000);
      return Math.round((bytes * 8) / 1e4) / 100;
    }),
    stats: up.stats,
  };
}

type UploadRunStats = Pick<
  UploadPathCase,
  | "ok"
  | "error"
  | "seconds"
  | "bps"
  | "utilization"
  | "ofCeiling"
  | "wirePerPayloadByte"
  | "drops"
  | "serverHeldMaxBytes"
  | "serverHeldSamples"
  | "serverSendQMaxBytes"
  | "agentSendQMaxBytes"
  | "perSecondMbit"
>;

async function uploadCase(
  st: St,
  plan: UploadPlan,
  build: Build,
  direction: UploadPathCase["direction"],
  rateMbit: number,
  rttMs: number,
): Promise<UploadPathCase> {
  const id = `upload-${direction}-${rateMbit}-rtt${rttMs}`;
  await setPath(st.links, direction, rateMbit, rttMs, "agents");
  st.ctx.log(`paths: ${id}: plain TCP flow…`);
  const ceiling = await ceilingFlow(st, direction, rateMbit, plan.ceilingSeconds);
  const raw = ((rateMbit * 1e6) / 8) * plan.seconds;
  const assetBytes =
    Math.ceil(Math.min(plan.maxAssetBytes, Math.max(plan.minAssetBytes, raw)) / MiB) * MiB;
  const landing = join(st.work, `landing-${st.seq++}`);
  const c = await withStack(
    st,
    build,
    async (stack) => {
      const idle = latencyStats(await stack.agents[0]!.probeRun(plan.idleSamplesPerKind));
      return uploadRun(st, stack, { id, direction, rateMbit, rttMs, assetBytes, ceiling }, idle);
    },
    // The Computer takes an upload of the case's size (its default bound is 100 MiB).
    { computerArgs: ["--landing-root", landing, "--upload-max-bytes", String(assetBytes)] },
  );
  rmSync(landing, { recursive: true, force: true });
  st.ctx.log(
    `paths: ${id} ${build.label}: ` +
      (c.ok
        ? `${formatBytes(assetBytes)} in ${c.seconds.toFixed(1)} s, ${(100 * c.utilization).toFixed(1)}% of the link, ${(100 * c.ofCeiling).toFixed(1)}% of the plain flow (${(100 * (ceiling.steadyUtilization ?? 0)).toFixed(1)}% of the link), ${c.carriage}`
        : `FAILED: ${c.error}`) +
      `, small requests p95 ${c.during.p95.toFixed(0)} ms (idle ${c.idle.p95.toFixed(0)}), Server held at most ${formatBytes(c.serverHeldMaxBytes)} (${c.serverHeldSamples} samples; its kernel's Send-Q to the Computer ${formatBytes(c.serverSendQMaxBytes)}, the Agent's to the Server ${formatBytes(c.agentSendQMaxBytes)}); ${c.drops} packets dropped; busy ${String(c.stats.busy ?? 0)}, rewinds ${String(c.stats.rewinds ?? 0)}, restarts ${String(c.stats.restarts ?? 0)}; Mbit/s per second ${c.perSecondMbit.join(" ")}`,
  );
  return c;
}

/** Every upload case of the plan, for each build. */
export async function uploadPathCases(
  st: St,
  plan: UploadPlan,
  builds: Build[],
): Promise<UploadPathCase[]> {
  const out: UploadPathCase[] = [];
  for (const build of builds) {
    for (const rttMs of plan.rttsMs) {
      for (const rateMbit of plan.ratesMbit) {
        out.push(await uploadCase(st, plan, build, "agentUplink", rateMbit, rttMs));
      }
    }
    if (plan.computerDownlinkMbit !== null) {
      out.push(await uploadCase(st, plan, build, "computerDownlink", plan.computerDownlinkMbit, 0));
    }
  }
  return out;
}
