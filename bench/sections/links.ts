/**
 * Section `links`: our stack on shaped links (the harness of scripts/links/, docs/decisions.md
 * D37–D39). For each rate (1, 2, 5, 20, 200 Mbit/s and unshaped) on the Computers' uplink and on
 * the Agents' downlink, with fresh processes of the shipped build: a default SDK download of a
 * skill file sized so the case lasts about the same time at every rate, timed small requests
 * (`tool_call` of a trivial MCP tool, `get_skills`) from the same Agent to the same Computer and
 * from another Agent to another Computer on the same link, idle and during the download; the
 * answers an honest client must never get (busy, timeouts, resumes) counted by the Agent and by
 * the Server; wire bytes from the shaped queue's counters; the Server's largest outbound queue.
 * Then fairness: two pulls sharing one bottleneck (one Agent, two Agents, binary beside base64).
 *
 * With `--baseline DIR`, every case runs a second time with the roles of another built checkout
 * (its `dist`), right before or after ours (the order alternates), so before/after figures come
 * from one run on the same links.
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import type { DownloadResult, ProbeKind, ProbeSample } from "../../scripts/links/agent-driver.ts";
import {
  counterDelta,
  readCounter,
  total,
  type CounterReading,
} from "../../scripts/links/metrics.ts";
import {
  OUR_BUILD,
  type AgentDriver,
  type Build,
  type StackOnLinks,
} from "../../scripts/links/stack.ts";
import { linksUnavailable } from "../../scripts/links/system.ts";
import {
  queueDelta,
  type Direction,
  type Links,
  type ShapeReport,
} from "../../scripts/links/topology.ts";
import { SkipSection, type Ctx } from "../lib/context.ts";
import {
  buildLabels,
  checkDownload,
  closeWorkspace,
  openWorkspace,
  sectionBuilds,
  withBuildStack,
  writeAsset,
  type LinksWorkspace,
} from "../stack/links-workspace.ts";
import { runCodingCases, type CodingCase } from "./links-coding.ts";
import type { LinksFairnessKind, LinksPlan } from "../lib/plan.ts";
import { MiB, formatBytes, percentile } from "../lib/stats.ts";
import { bytesAt } from "../lib/progress.ts";

export interface LatencyStats {
  /** Answered samples. */
  n: number;
  /** Samples that failed (timeout or error). */
  failed: number;
  p50: number;
  p95: number;
  max: number;
}

export type LatencyByKind = Record<ProbeKind | "all", LatencyStats>;

/** What an honest client on a slow link must never see, by who counted it. */
export interface HonestCounts {
  /** `busy` answers to the pull's chunk requests, seen by the Agent (Server's and Computer's). */
  busy: number;
  /** Chunk requests that timed out, locally or at the Server's relay. */
  timeouts: number;
  /** Resumes, from the SDK's PullStats. */
  resumes: number;
  /** The Server's `a2c_limit_refusals_total` over the download, by limit. */
  serverRefusals: CounterReading;
  /** The Server's `a2c_relay_requests_total` outcomes other than `answered`, by event/outcome. */
  relayNotAnswered: CounterReading;
  /** The Server's `a2c_disconnects_total`, by reason. */
  disconnects: CounterReading;
}

export interface DownloadSummary {
  ok: boolean;
  error: string | null;
  seconds: number;
  bytes: number;
  carriage: string | null;
  mbps: number;
  /** Payload bits per second over the link's rate; null when unshaped. */
  utilization: number | null;
  stats: Record<string, number | boolean>;
  chunkRequests: number;
  chunkFailures: Record<string, number>;
  logs: Record<string, number>;
}

export interface LinkCaseRun {
  build: string;
  /** Load average (1, 5, 15 min) when the case started. */
  loadAvg: number[];
  download: DownloadSummary;
  honest: HonestCounts;
  /** Everything that left through the shaped queue during the download, per payload byte. */
  wire: { bytes: number; drops: number; perPayloadByte: number };
  latency: {
    idle: LatencyByKind;
    during: LatencyByKind;
    idleOther: LatencyByKind;
    duringOther: LatencyByKind;
  };
  /** The Server's `a2c_outbound_largest_queue_bytes` read every `queueSampleMs` during the download. */
  serverQueue: { maxBytes: number; samples: number; failures: number };
  /** How often small requests were sent during the download (open loop). */
  probeIntervalMs: number;
}

export interface LinkCase {
  id: string;
  direction: Direction;
  /** Mbit/s; null: unshaped. */
  rateMbit: number | null;
  /** One-way delay of the packet delay line between the Computers and the Server; 0: none. */
  oneWayDelayMs: number;
  /** A case beside the rate matrix (plan.extraCases): a fixed file size or a delay. */
  extra: boolean;
  shape: ShapeReport;
  assetBytes: number;
  runs: LinkCaseRun[];
}

export interface FairPull {
  agent: number;
  carriage: string | null;
  ok: boolean;
  error: string | null;
  seconds: number;
  /** Payload bytes delivered while both pulls ran. */
  overlapBytes: number;
  /** Link share: overlap bytes, base64 counted at 4/3 (what it puts on the link). */
  share: number;
}

export interface FairnessRun {
  build: string;
  loadAvg: number[];
  overlapSeconds: number;
  pulls: FairPull[];
  jain: number;
}

export interface FairnessCase {
  id: string;
  kind: LinksFairnessKind;
  direction: Direction;
  rateMbit: number;
  shape: ShapeReport;
  assetBytes: number;
  runs: FairnessRun[];
}

export interface LinksData {
  builds: Array<{ label: string; commit: string | null }>;
  /** The plan the section ran (also in the report's meta). */
  plan: LinksPlan;
  cases: LinkCase[];
  fairness: FairnessCase[];
  /** Compressed carriage, on beside off (links-coding.ts); absent in reports from before it. */
  coding?: CodingCase[];
  notes: string[];
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/** The asset of a case: clamp(rate × seconds, min, max) rounded up to a MiB; unshaped: max. */
export function assetBytesFor(plan: LinksPlan, rateMbit: number | null, seconds: number): number {
  if (rateMbit === null) return plan.maxAssetBytes;
  const raw = ((rateMbit * 1e6) / 8) * seconds;
  const clamped = Math.min(plan.maxAssetBytes, Math.max(plan.minAssetBytes, raw));
  return Math.ceil(clamped / MiB) * MiB;
}

export function latencyStats(samples: readonly ProbeSample[]): LatencyStats {
  const ok = samples.filter((s) => s.ok).map((s) => s.ms);
  const sorted = [...ok].sort((a, b) => a - b);
  return {
    n: ok.length,
    failed: samples.length - ok.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

function byKind(samples: readonly ProbeSample[]): LatencyByKind {
  return {
    tool_call: latencyStats(samples.filter((s) => s.kind === "tool_call")),
    get_skills: latencyStats(samples.filter((s) => s.kind === "get_skills")),
    all: latencyStats(samples),
  };
}

export function jainIndex(xs: readonly number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares > 0 ? (sum * sum) / (xs.length * squares) : NaN;
}

/**
 * Resumes from the SDK's PullStats; a download that failed returns none, so then from the lines
 * the SDK logged about resuming.
 */
function resumesOf(dl: DownloadResult): number {
  if (typeof dl.stats.resumes === "number") return dl.stats.resumes;
  return Object.entries(dl.logs).reduce(
    (n, [k, v]) => (/resum/i.test(k) && !k.includes(" (") ? n + v : n),
    0,
  );
}

function honestFrom(dl: DownloadResult, m0: string, m1: string): HonestCounts {
  const failures = dl.chunks.failures;
  const count = (pred: (k: string) => boolean): number =>
    Object.entries(failures).reduce((n, [k, v]) => (pred(k) ? n + v : n), 0);
  const relay = counterDelta(
    readCounter(m0, "a2c_relay_requests_total"),
    readCounter(m1, "a2c_relay_requests_total"),
  );
  const relayNotAnswered: CounterReading = {};
  for (const [k, v] of Object.entries(relay))
    if (!k.includes("outcome=answered")) relayNotAnswered[k] = v;
  return {
    busy: count((k) => k.startsWith("busy")),
    timeouts: count((k) => k === "request_timeout" || k === "relay_timeout"),
    resumes: resumesOf(dl),
    serverRefusals: counterDelta(
      readCounter(m0, "a2c_limit_refusals_total"),
      readCounter(m1, "a2c_limit_refusals_total"),
    ),
    relayNotAnswered,
    disconnects: counterDelta(
      readCounter(m0, "a2c_disconnects_total"),
      readCounter(m1, "a2c_disconnects_total"),
    ),
  };
}

/** True when a run saw nothing an honest client must not see, and its download completed. */
export function isClean(run: LinkCaseRun): boolean {
  const h = run.honest;
  return (
    run.download.ok &&
    run.download.chunkRequests > 0 &&
    h.busy === 0 &&
    h.timeouts === 0 &&
    h.resumes === 0 &&
    total(h.serverRefusals) === 0 &&
    total(h.relayNotAnswered) === 0
  );
}

/** What was wrong in a run, in a few words (empty when clean). */
export function troubles(run: LinkCaseRun): string {
  const h = run.honest;
  const parts: string[] = [];
  if (!run.download.ok) parts.push(`failed: ${run.download.error ?? "?"}`);
  if (run.download.ok && run.download.chunkRequests === 0) {
    parts.push("the SDK's chunk requests were not seen on its client: busy and timeouts unknown");
  }
  if (h.busy) parts.push(`${h.busy} busy`);
  if (h.timeouts) parts.push(`${h.timeouts} timeouts`);
  if (h.resumes) parts.push(`${h.resumes} resumes`);
  const refusals = total(h.serverRefusals);
  if (refusals) parts.push(`${refusals} Server refusals`);
  const relay = total(h.relayNotAnswered);
  if (relay) {
    parts.push(
      `relay: ${Object.entries(h.relayNotAnswered)
        .map(([k, v]) => `${v} ${k.replace(/event=client:|outcome=/g, "")}`)
        .join(", ")}`,
    );
  }
  return parts.join("; ");
}

interface SectionState extends LinksWorkspace {
  plan: LinksPlan;
}

async function shapeFor(
  links: Links,
  direction: Direction,
  rateMbit: number | null,
): Promise<ShapeReport> {
  const other: Direction = direction === "uplink" ? "downlink" : "uplink";
  await links.shape(other, null);
  return links.shape(direction, rateMbit === null ? null : { rateMbit });
}

/** A download's expected time at the link's rate (a guess for unshaped links). */
function expectedSeconds(bytes: number, rateMbit: number | null): number {
  return rateMbit === null ? 5 : (bytes * 8) / (rateMbit * 1e6);
}

/** Longest a download may take before it is reported incomplete. */
function deadlineMs(bytes: number, rateMbit: number | null): number {
  return Math.round((3 * expectedSeconds(bytes, rateMbit) + 60) * 1000);
}

async function withStack<T>(
  st: SectionState,
  build: Build,
  label: string,
  delayMs: number,
  fn: (s: StackOnLinks) => Promise<T>,
): Promise<T> {
  // The delay line sits on the Computers' side (router-c): a round trip between the Computer and
  // the Server gains 2 × delayMs, as every small request and chunk of the case does.
  if (delayMs > 0) await st.links.delay("computers", delayMs);
  try {
    return await withBuildStack(st, build, label, fn);
  } finally {
    if (delayMs > 0) await st.links.delay("computers", 0);
  }
}

async function downloadRun(
  st: SectionState,
  c: Omit<LinkCase, "runs">,
  build: Build,
  relPath: string,
): Promise<LinkCaseRun> {
  const loadAvg = loadavg();
  return withStack(st, build, c.id, c.oneWayDelayMs, async (stack) => {
    const [a0, a1] = stack.agents as [AgentDriver, AgentDriver];
    const h = await a0.handle({ skill: st.skill, relPath });
    const idle = await a0.probeRun(st.plan.idleSamplesPerKind);
    const idleOther = await a1.probeRun(st.plan.idleSamplesPerKind);
    const expected = expectedSeconds(c.assetBytes, c.rateMbit);
    const interval = Math.min(
      1000,
      Math.max(50, Math.round((expected * 1000) / (2 * st.plan.duringSamplesPerKind))),
    );
    const m0 = await stack.metrics();
    const c0 = await st.links.counters();
    const gauge = await stack.serverTool.gaugeStart(
      stack.metricsUrl,
      "a2c_outbound_largest_queue_bytes",
      st.plan.queueSampleMs,
    );
    const p0 = await a0.probeStart(interval);
    const p1 = await a1.probeStart(interval);
    const dest = join(st.work, `download-${st.seq}.bin`);
    const dl = await a0.download({ ...h, dest, deadlineMs: deadlineMs(c.assetBytes, c.rateMbit) });
    const c1 = await st.links.counters();
    const queue = await stack.serverTool.gaugeStop(gauge);
    const end = dl.startedAt + dl.seconds * 1000;
    // Only what was asked while the download ran counts as "during".
    const within = (xs: ProbeSample[]): ProbeSample[] => xs.filter((s) => s.at <= end);
    const during = within(await a0.probeStop(p0));
    const duringOther = within(await a1.probeStop(p1));
    const m1 = await stack.metrics();
    checkDownload(st, relPath, h.sha256, dl, dest);
    const rate = c.shape.rateBitsPerSecond;
    const carried = queueDelta(c0[c.direction], c1[c.direction]);
    return {
      build: build.label,
      loadAvg,
      download: {
        ok: dl.ok,
        error: dl.error,
        seconds: dl.seconds,
        bytes: dl.bytes,
        carriage: dl.carriage,
        mbps: dl.ok ? dl.totalSize / 1e6 / dl.seconds : 0,
        utilization: dl.ok && rate ? (dl.totalSize * 8) / dl.seconds / rate : null,
        stats: dl.stats,
        chunkRequests: dl.chunks.requests,
        chunkFailures: dl.chunks.failures,
        logs: dl.logs,
      },
      honest: honestFrom(dl, m0, m1),
      wire: {
        ...carried,
        perPayloadByte: dl.bytes > 0 ? carried.bytes / dl.bytes : NaN,
      },
      latency: {
        idle: byKind(idle),
        during: byKind(during),
        idleOther: byKind(idleOther),
        duringOther: byKind(duringOther),
      },
      serverQueue: { maxBytes: queue.max, samples: queue.samples, failures: queue.failures },
      probeIntervalMs: interval,
    };
  });
}

/** Builds in the order of the `i`-th case: ours first on even cases, the baseline first on odd. */
function ordered(builds: readonly Build[], i: number): Build[] {
  return i % 2 === 0 ? [...builds] : [...builds].reverse();
}

function fairnessPulls(
  dls: DownloadResult[],
  agents: number[],
): { overlapSeconds: number; pulls: FairPull[] } {
  const start = Math.max(...dls.map((d) => d.startedAt));
  const end = Math.min(...dls.map((d) => d.startedAt + d.seconds * 1000));
  const pulls = dls.map((d, i) => {
    const from = bytesAt(d.progress, start - d.startedAt);
    const to = bytesAt(d.progress, end - d.startedAt);
    const overlapBytes = Math.max(0, to - from);
    return {
      agent: agents[i]!,
      carriage: d.carriage,
      ok: d.ok,
      error: d.error,
      seconds: d.seconds,
      overlapBytes,
      share: overlapBytes * (d.carriage === "base64" ? 4 / 3 : 1),
    };
  });
  return { overlapSeconds: Math.max(0, (end - start) / 1000), pulls };
}

async function fairnessRun(
  st: SectionState,
  c: Omit<FairnessCase, "runs">,
  build: Build,
): Promise<FairnessRun> {
  const loadAvg = loadavg();
  const a = writeAsset(st, `pair-a-${c.assetBytes}.bin`, c.assetBytes);
  const b = writeAsset(st, `pair-b-${c.assetBytes}.bin`, c.assetBytes);
  return withStack(st, build, c.id, 0, async (stack) => {
    const [a0, a1] = stack.agents as [AgentDriver, AgentDriver];
    const deadline = deadlineMs(2 * c.assetBytes, c.rateMbit);
    const dest = (n: number): string => join(st.work, `fair-${st.seq}-${n}.bin`);
    let plan: Array<{ driver: AgentDriver; agent: number; relPath: string; binary?: boolean }>;
    if (c.kind === "two-agents") {
      plan = [
        { driver: a0, agent: 0, relPath: a },
        { driver: a1, agent: 1, relPath: a },
      ];
    } else {
      plan = [
        { driver: a0, agent: 0, relPath: a },
        {
          driver: a0,
          agent: 0,
          relPath: b,
          ...(c.kind === "binary-base64" ? { binary: false } : {}),
        },
      ];
    }
    const handles = await Promise.all(
      plan.map((p) => p.driver.handle({ skill: st.skill, relPath: p.relPath })),
    );
    const dls = await Promise.all(
      plan.map((p, i) =>
        p.driver.download({
          ...handles[i]!,
          dest: dest(i),
          deadlineMs: deadline,
          ...(p.binary === false ? { binary: false } : {}),
        }),
      ),
    );
    plan.forEach((p, i) => checkDownload(st, p.relPath, handles[i]!.sha256, dls[i]!, dest(i)));
    const { overlapSeconds, pulls } = fairnessPulls(
      dls,
      plan.map((p) => p.agent),
    );
    return {
      build: build.label,
      loadAvg,
      overlapSeconds,
      pulls,
      jain: jainIndex(pulls.map((p) => p.share)),
    };
  });
}

export async function runLinks(ctx: Ctx): Promise<LinksData> {
  const unavailable = linksUnavailable();
  if (unavailable) throw new SkipSection(unavailable);
  const builds = sectionBuilds(ctx);
  const plan = ctx.plan.links;
  const ws = await openWorkspace(ctx, "links", { agents: 2, computers: 2 }, !plan.freshStacks);
  const { links, home, work } = ws;
  const st: SectionState = Object.assign(ws, { plan });
  const data: LinksData = {
    builds: buildLabels(builds),
    plan,
    cases: [],
    fairness: [],
    coding: [],
    notes: [],
  };
  let caseIndex = 0;
  try {
    const downloadCases: Array<{
      direction: Direction;
      rateMbit: number | null;
      oneWayDelayMs: number;
      assetBytes: number;
      extra: boolean;
    }> = [
      ...plan.directions.flatMap((direction) =>
        plan.rates.map((rateMbit) => ({
          direction,
          rateMbit,
          oneWayDelayMs: 0,
          assetBytes: assetBytesFor(plan, rateMbit, plan.caseSeconds),
          extra: false,
        })),
      ),
      ...plan.extraCases.map((x) => ({
        direction: x.direction,
        rateMbit: x.rateMbit,
        oneWayDelayMs: x.oneWayMs ?? 0,
        assetBytes: x.assetBytes ?? assetBytesFor(plan, x.rateMbit, plan.caseSeconds),
        extra: true,
      })),
    ];
    for (const dc of downloadCases) {
      const rateWord = dc.rateMbit === null ? "unshaped" : `${dc.rateMbit}`;
      const fixed =
        dc.extra && dc.assetBytes !== assetBytesFor(plan, dc.rateMbit, plan.caseSeconds);
      const id =
        `${dc.direction}-${rateWord}` +
        (fixed ? `-${formatBytes(dc.assetBytes).replace(" ", "")}` : "") +
        (dc.oneWayDelayMs ? `-rtt${2 * dc.oneWayDelayMs}` : "");
      const shape = await shapeFor(links, dc.direction, dc.rateMbit);
      const relPath = writeAsset(st, `asset-${dc.assetBytes}.bin`, dc.assetBytes);
      const c: LinkCase = { id, ...dc, shape, runs: [] };
      for (const build of ordered(builds, caseIndex)) {
        ctx.log(`links: ${id} (${formatBytes(dc.assetBytes)}), ${build.label}…`);
        const run = await downloadRun(st, c, build, relPath);
        c.runs.push(run);
        const d = run.download;
        ctx.log(
          `links: ${id} ${build.label}: ${d.ok ? `${d.seconds.toFixed(1)} s` : "FAILED"}` +
            `${d.utilization !== null ? `, ${pct(d.utilization)} of the link` : `, ${d.mbps.toFixed(1)} MB/s`}` +
            `, small requests p95 ${run.latency.during.all.p95.toFixed(0)} ms (idle ${run.latency.idle.all.p95.toFixed(0)})` +
            `${isClean(run) ? "" : `; ${troubles(run)}`}`,
        );
      }
      data.cases.push(c);
      caseIndex++;
    }
    for (const direction of plan.fairness.directions) {
      for (const kind of plan.fairness.kinds) {
        const rateMbit = plan.fairness.rateMbit;
        const shape = await shapeFor(links, direction, rateMbit);
        const assetBytes = assetBytesFor(plan, rateMbit, plan.caseSeconds / 2);
        const c: FairnessCase = {
          id: `fair-${kind}-${direction}-${rateMbit}`,
          kind,
          direction,
          rateMbit,
          shape,
          assetBytes,
          runs: [],
        };
        for (const build of ordered(builds, caseIndex)) {
          ctx.log(`links: ${c.id} (2 × ${formatBytes(assetBytes)}), ${build.label}…`);
          const run = await fairnessRun(st, c, build);
          c.runs.push(run);
          ctx.log(
            `links: ${c.id} ${build.label}: Jain ${run.jain.toFixed(3)} (${run.pulls.map((p) => `${((100 * p.share) / run.pulls.reduce((a, x) => a + x.share, 0)).toFixed(0)}%`).join("/")})`,
          );
        }
        data.fairness.push(c);
        caseIndex++;
      }
    }
    data.coding = await runCodingCases({
      plan,
      home,
      skill: st.skill,
      work,
      shape: (direction, rateMbit) => shapeFor(links, direction, rateMbit),
      withStack: (label, fn) => withStack(st, OUR_BUILD, label, 0, fn),
      counters: () => links.counters(),
      check: (relPath, sha256, handleSha, dl, dest) => {
        st.assets.set(relPath, sha256);
        checkDownload(st, relPath, handleSha, dl, dest);
      },
      log: (m) => ctx.log(m),
    });
  } finally {
    await closeWorkspace(ws);
  }
  if (!plan.freshStacks) data.notes.push("The runs of a build share its stack (the quick plan).");
  data.notes.push(
    `Each download's file is clamp(rate × ${plan.caseSeconds} s, ${formatBytes(plan.minAssetBytes)}, ${formatBytes(plan.maxAssetBytes)}) (unshaped: ${formatBytes(plan.maxAssetBytes)}), so a case lasts about ${plan.caseSeconds} s at the link's rate; fairness pulls are half that each. Cases named with a size (e.g. uplink-2-16MiB) use that file instead: one that takes longer to cross the link than a 16 × 512 KiB window takes to drain.`,
  );
  if (plan.extraCases.some((x) => x.oneWayMs)) {
    data.notes.push(
      "Cases named rtt… add a round trip with the harness's packet delay line (a TUN device in router-c; every packet between the Computers and the Server waits the one-way delay in a userspace line, so TCP sees the round trip itself): emulated in userspace, since these kernels have no netem.",
    );
  }
  return data;
}
