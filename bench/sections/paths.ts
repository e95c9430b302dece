/**
 * Section `paths`: long paths on the link harness (scripts/links/, docs/decisions.md
 * D96). Round trips come from the harness's packet delay line (a TUN device in a router
 * namespace; TCP sees the round trip itself), rates from `tbf` on the router's forwarding hop.
 * - Round trips: base round trips × rates × directions, each with a plain TCP flow on the same
 *   path first (the ceiling), then default SDK downloads, the same Agent's small requests every
 *   300 ms during them (some runs without, where a goal asks for both).
 * - A rate step during a download: the link drops and comes back.
 * - A latecomer: two pulls on one uplink, the second started later.
 * - Long answers: every answer of the Computer comes a constant round trip later (unshaped).
 * - Uploads (paths-upload.ts): on a shaped Agent uplink with and without a round trip, and to a
 *   Computer behind a slow downlink.
 * `npm run bench -- --only paths` runs this section alone.
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import { DEFAULT_BINARY_CHUNK_BYTES, DEFAULT_WINDOW } from "../../agent/index.ts";
import type { DownloadResult, ProbeSample } from "../../scripts/links/agent-driver.ts";
import { plainFlowOnce, type PlainFlowResult } from "../../scripts/links/plain-flow.ts";
import type {
  AgentDriver,
  Build,
  StackOnLinks,
  StackOnLinksOptions,
} from "../../scripts/links/stack.ts";
import { linksUnavailable } from "../../scripts/links/system.ts";
import {
  DIRECTIONS,
  queueDelta,
  type DelaySide,
  type Direction,
  type Links,
  type ShapeReport,
} from "../../scripts/links/topology.ts";
import { SkipSection, type Ctx } from "../lib/context.ts";
import {
  buildLabels,
  checkDownload,
  openWorkspace,
  sectionBuilds,
  withBuildStack,
  writeAsset,
  type LinksWorkspace,
} from "../stack/links-workspace.ts";
import type { LongAnswerForm, PathsPlan } from "../lib/plan.ts";
import { MiB, formatBytes } from "../lib/stats.ts";
import { jainIndex, latencyStats, type LatencyStats } from "./links.ts";
import { FULL_FRAME_PAYLOAD, bytesAt, roundText, rounds, secondsToRate } from "../lib/progress.ts";
import { uploadPathCases, type UploadPathCase } from "./paths-upload.ts";

/** The same Agent's small requests during a download: one every 300 ms (issue's user). */
export const PROBE_MS = 300;

export interface PathRun {
  build: string;
  loadAvg: number[];
  /** Small requests ran during the download. */
  probes: boolean;
  ok: boolean;
  error: string | null;
  seconds: number;
  carriage: string | null;
  /** Payload bits per second over the whole download. */
  bps: number;
  /** `bps` over the link's rate (null when unshaped). */
  utilization: number | null;
  /** `bps` over the plain flow's rate past its slow start on the same path. */
  ofCeiling: number;
  timeouts: number;
  busy: number;
  resumes: number;
  wirePerPayloadByte: number;
  /** Packets the shaped direction's queue dropped during the download (TCP sent them again). */
  drops: number;
  idle: LatencyStats;
  during: LatencyStats | null;
  /** The SDK's PullStats. */
  stats: Record<string, number | boolean>;
}

export interface Ceiling extends Omit<PlainFlowResult, "marks"> {
  /** Payload rate over the link's rate, whole flow / past slow start (null when unshaped). */
  utilization: number | null;
  steadyUtilization: number | null;
}

export interface RoundTripCase {
  id: string;
  direction: Direction;
  rateMbit: number;
  rttMs: number;
  shape: ShapeReport;
  assetBytes: number;
  ceiling: Ceiling;
  runs: PathRun[];
}

export interface StepCase {
  id: string;
  build: string;
  direction: Direction;
  fromMbit: number;
  toMbit: number;
  rttMs: number;
  assetBytes: number;
  ok: boolean;
  error: string | null;
  seconds: number;
  timeouts: number;
  busy: number;
  wirePerPayloadByte: number;
  /** Packets the shaped queue dropped during the download. */
  drops: number;
  idleP95: number;
  /** From the drop until the last small request over idle p95 + 250 ms had its answer (0: none). */
  latencyBackSeconds: number;
  worstMs: number;
  /**
   * From each change until a 1 s window carried ≥ 90 % of the new rate's payload (what a plain
   * TCP flow carries at it: FULL_FRAME_PAYLOAD); null: never.
   */
  downToNinetySeconds: number | null;
  upToNinetySeconds: number | null;
  /** Payload Mbit/s of each second from 2 s before the drop to 4 s after the rise. */
  perSecondMbit: number[];
}

export interface LatecomerCase {
  id: string;
  build: string;
  rateMbit: number;
  rttMs: number;
  /** Payload bytes each pull delivered in the window after the second one's start. */
  windowBytes: number[];
  windowSeconds: number;
  jain: number;
  /** Packets the shared uplink's queue dropped while either pull ran. */
  drops: number;
  idleP95: number;
  during: LatencyStats;
  pulls: Array<{ ok: boolean; seconds: number; error: string | null }>;
}

export interface LongAnswerCase {
  id: string;
  build: string;
  /** Who holds the round trip (plan.ts `LongAnswerForm`). */
  form: LongAnswerForm;
  rttMs: number;
  assetBytes: number;
  /** The most the pull may hold in flight: window × binary chunk ceiling of the SDK. */
  ceilingBytes: number;
  ok: boolean;
  error: string | null;
  seconds: number;
  /** Bytes delivered in each round trip from the first answer on. */
  perRound: number[];
  /** The first round trip (1-based) that delivered ≥ 90 % of the ceiling; null: none did. */
  roundsToCeiling: number | null;
  stats: Record<string, number | boolean>;
  /**
   * A plain TCP flow of the same bytes from computer-0 to the Server on the same path, counted
   * the same way from its first data: what TCP itself needs to carry the ceiling a round trip
   * (the `packets` form; null when the Computer holds the answers).
   */
  plain: LongAnswerPlain | null;
}

export interface LongAnswerPlain {
  seconds: number;
  perRound: number[];
  roundsToCeiling: number | null;
}

export interface PathsData {
  builds: Array<{ label: string; commit: string | null }>;
  plan: PathsPlan;
  roundTrips: RoundTripCase[];
  steps: StepCase[];
  latecomers: LatecomerCase[];
  longAnswers: LongAnswerCase[];
  uploads: UploadPathCase[];
  notes: string[];
}

export type St = LinksWorkspace;

const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function asset(st: St, bytes: number, tag = "a"): string {
  return writeAsset(st, `${tag}-${bytes}.bin`, bytes);
}

const count = (dl: DownloadResult, pred: (k: string) => boolean): number =>
  Object.entries(dl.chunks.failures).reduce((n, [k, v]) => (pred(k) ? n + v : n), 0);
const timeoutsOf = (dl: DownloadResult): number =>
  count(dl, (k) => k === "request_timeout" || k === "relay_timeout");
const busyOf = (dl: DownloadResult): number => count(dl, (k) => k.startsWith("busy"));

function sideOf(direction: Direction): DelaySide {
  return direction === "uplink" ? "computers" : "agents";
}

/** Shapes `direction` (the other one unshaped) and sets the delay lines for `rttMs` on its side. */
export async function setPath(
  links: Links,
  direction: Direction | null,
  rateMbit: number | null,
  rttMs: number,
  side: DelaySide,
): Promise<ShapeReport | null> {
  for (const d of DIRECTIONS) {
    await links.shape(d, direction === d && rateMbit ? { rateMbit } : null);
  }
  for (const s of ["computers", "agents"] as const) {
    const want = s === side ? rttMs / 2 : 0;
    if (links.delays()[s] !== want) await links.delay(s, want);
  }
  return direction ? (await links.shapes())[direction] : null;
}

export function withStack<T>(
  st: St,
  build: Build,
  fn: (s: StackOnLinks) => Promise<T>,
  computer: Pick<StackOnLinksOptions, "computerArgs" | "computerHoldMs"> = {},
): Promise<T> {
  return withBuildStack(st, build, "stack", fn, computer);
}

/** The plain TCP flow of `seconds` at the link's rate on the path as it is set now. */
export async function ceilingFlow(
  st: St,
  direction: Direction,
  rateMbit: number,
  seconds: number,
): Promise<Ceiling> {
  const bytes = Math.max(MiB, Math.round(((rateMbit * 1e6) / 8) * seconds));
  const { marks: _marks, ...flow } = await plainFlowOnce(st.links, direction, bytes);
  const rate = rateMbit * 1e6;
  return { ...flow, utilization: flow.bps / rate, steadyUtilization: flow.steadyBps / rate };
}

/**
 * What a transfer made of its case's path: its rate, its share of the link and of the plain flow
 * measured beside it, the bytes the shaped direction carried per payload byte and the packets its
 * queue dropped (`queue`: `queueDelta` around the transfer).
 */
export function linkShares(
  c: { rateMbit: number; ceiling: Ceiling },
  moved: { ok: boolean; totalSize: number; seconds: number },
  queue: { bytes: number; drops: number },
  payloadBytes: number,
): {
  bps: number;
  utilization: number;
  ofCeiling: number;
  wirePerPayloadByte: number;
  drops: number;
} {
  const bps = moved.ok ? (moved.totalSize * 8) / moved.seconds : 0;
  return {
    bps,
    utilization: bps / (c.rateMbit * 1e6),
    ofCeiling: bps / c.ceiling.steadyBps,
    wirePerPayloadByte: queue.bytes / Math.max(1, payloadBytes),
    drops: queue.drops,
  };
}

async function downloadRun(
  st: St,
  stack: StackOnLinks,
  c: Omit<RoundTripCase, "runs">,
  probes: boolean,
  idle: LatencyStats,
): Promise<PathRun> {
  const a0 = stack.agents[0]!;
  const relPath = asset(st, c.assetBytes);
  const h = await a0.handle({ skill: st.skill, relPath });
  const loadAvg = loadavg();
  const c0 = await st.links.counters();
  const probe = probes ? await a0.probeStart(PROBE_MS) : null;
  const dest = join(st.work, `dl-${st.seq++}.bin`);
  const expected = (c.assetBytes * 8) / (c.rateMbit * 1e6);
  const dl = await a0.download({ ...h, dest, deadlineMs: Math.round((4 * expected + 60) * 1000) });
  const end = dl.startedAt + dl.seconds * 1000;
  const samples = probe === null ? null : (await a0.probeStop(probe)).filter((s) => s.at <= end);
  const c1 = await st.links.counters();
  checkDownload(st, relPath, h.sha256, dl, dest);
  return {
    build: stack.build.label,
    loadAvg,
    probes,
    ok: dl.ok,
    error: dl.error,
    seconds: dl.seconds,
    carriage: dl.carriage,
    ...linkShares(c, dl, queueDelta(c0[c.direction], c1[c.direction]), dl.bytes),
    timeouts: timeoutsOf(dl),
    busy: busyOf(dl),
    resumes: typeof dl.stats.resumes === "number" ? dl.stats.resumes : 0,
    idle,
    during: samples === null ? null : latencyStats(samples),
    stats: dl.stats,
  };
}

async function roundTripCases(st: St, plan: PathsPlan["roundTrips"], builds: Build[]) {
  const out: RoundTripCase[] = [];
  for (const direction of plan.directions) {
    for (const rateMbit of plan.ratesMbit) {
      for (const rttMs of plan.rttsMs) {
        const id = `${direction}-${rateMbit}-rtt${rttMs}`;
        const shape = (await setPath(st.links, direction, rateMbit, rttMs, sideOf(direction)))!;
        st.ctx.log(`paths: ${id}: plain TCP flow…`);
        const ceiling = await ceilingFlow(st, direction, rateMbit, plan.ceilingSeconds);
        const raw = ((rateMbit * 1e6) / 8) * plan.seconds;
        const assetBytes =
          Math.ceil(Math.min(plan.maxAssetBytes, Math.max(plan.minAssetBytes, raw)) / MiB) * MiB;
        const c: RoundTripCase = {
          id,
          direction,
          rateMbit,
          rttMs,
          shape,
          assetBytes,
          ceiling,
          runs: [],
        };
        const goal = plan.goalRttsMs.includes(rttMs) && plan.goalRatesMbit.includes(rateMbit);
        const modes = goal ? plan.goalProbeModes : [true];
        st.ctx.log(
          `paths: ${id}: plain flow ${(100 * (ceiling.steadyUtilization ?? 0)).toFixed(1)}% of the link past slow start (${(100 * (ceiling.utilization ?? 0)).toFixed(1)}% whole), min RTT ${ceiling.minRttMs ?? "?"} ms, ${ceiling.drops} packets dropped`,
        );
        // With a baseline, the builds take turns going first, case by case.
        for (const build of out.length % 2 === 0 ? builds : [...builds].reverse()) {
          await withStack(st, build, async (stack) => {
            const idle = latencyStats(await stack.agents[0]!.probeRun(plan.idleSamplesPerKind));
            for (const probes of modes) {
              const run = await downloadRun(st, stack, c, probes, idle);
              c.runs.push(run);
              st.ctx.log(
                `paths: ${id} ${build.label}${probes ? "" : " (no small requests)"}: ` +
                  (run.ok
                    ? `${(100 * (run.utilization ?? 0)).toFixed(1)}% of the link, ${(100 * run.ofCeiling).toFixed(1)}% of the plain flow`
                    : `FAILED: ${run.error}`) +
                  (run.during
                    ? `, small requests p95 ${run.during.p95.toFixed(0)} ms (idle ${idle.p95.toFixed(0)})`
                    : "") +
                  (run.timeouts || run.busy ? `; ${run.timeouts} timeouts, ${run.busy} busy` : "") +
                  (run.drops > 0 ? `; ${run.drops} packets dropped` : ""),
              );
            }
          });
        }
        out.push(c);
      }
    }
  }
  return out;
}

async function stepCase(
  st: St,
  p: NonNullable<PathsPlan["step"]>,
  build: Build,
): Promise<StepCase> {
  const id = `step-${p.direction}-${p.fromMbit}-${p.toMbit}-${p.fromMbit}-rtt${p.rttMs}`;
  await setPath(st.links, p.direction, p.fromMbit, p.rttMs, sideOf(p.direction));
  return withStack(st, build, async (stack) => {
    const a0 = stack.agents[0]!;
    const relPath = asset(st, p.assetBytes);
    const h = await a0.handle({ skill: st.skill, relPath });
    const idle = latencyStats(await a0.probeRun(10));
    const c0 = await st.links.counters();
    const probe = await a0.probeStart(200);
    const dest = join(st.work, `step-${st.seq++}.bin`);
    const changes = (async (): Promise<{ drop: number; rise: number }> => {
      await sleep(p.dropAtSeconds * 1000);
      const drop = now();
      await st.links.shape(p.direction, { rateMbit: p.toMbit });
      await sleep(p.holdSeconds * 1000);
      const rise = now();
      await st.links.shape(p.direction, { rateMbit: p.fromMbit });
      return { drop, rise };
    })();
    const dl = await a0.download({ ...h, dest, deadlineMs: 300_000 });
    const { drop, rise } = await changes;
    const samples = await a0.probeStop(probe);
    const queue = queueDelta(c0[p.direction], (await st.links.counters())[p.direction]);
    checkDownload(st, relPath, h.sha256, dl, dest);
    const threshold = idle.p95 + 250;
    const over = samples.filter((s) => s.at >= drop && s.at <= rise && (!s.ok || s.ms > threshold));
    const since = (s: ProbeSample): number => (s.at + s.ms - drop) / 1000;
    const dropMs = drop - dl.startedAt;
    const riseMs = rise - dl.startedAt;
    const endMs = dl.seconds * 1000;
    return {
      id,
      build: build.label,
      direction: p.direction,
      fromMbit: p.fromMbit,
      toMbit: p.toMbit,
      rttMs: p.rttMs,
      assetBytes: p.assetBytes,
      ok: dl.ok,
      error: dl.error,
      seconds: dl.seconds,
      timeouts: timeoutsOf(dl),
      busy: busyOf(dl),
      wirePerPayloadByte: queue.bytes / Math.max(1, dl.bytes),
      drops: queue.drops,
      idleP95: idle.p95,
      latencyBackSeconds: over.length > 0 ? Math.max(...over.map(since)) : 0,
      worstMs: Math.max(0, ...samples.filter((s) => s.at >= drop && s.at <= rise).map((s) => s.ms)),
      downToNinetySeconds: secondsToRate(
        dl.progress,
        dropMs,
        riseMs,
        0.9 * p.toMbit * 1e6 * FULL_FRAME_PAYLOAD,
      ),
      upToNinetySeconds: secondsToRate(
        dl.progress,
        riseMs,
        endMs,
        0.9 * p.fromMbit * 1e6 * FULL_FRAME_PAYLOAD,
      ),
      perSecondMbit: Array.from({ length: Math.ceil((riseMs - dropMs) / 1000) + 6 }, (_, i) => {
        const t = dropMs - 2000 + i * 1000;
        return ((bytesAt(dl.progress, t + 1000) - bytesAt(dl.progress, t)) * 8) / 1e6;
      }),
    };
  });
}

async function latecomerCase(
  st: St,
  p: NonNullable<PathsPlan["latecomer"]>,
  rttMs: number,
  build: Build,
): Promise<LatecomerCase> {
  const id = `latecomer-uplink-${p.rateMbit}-rtt${rttMs}`;
  await setPath(st.links, "uplink", p.rateMbit, rttMs, "computers");
  return withStack(st, build, async (stack) => {
    const [a0, a1] = stack.agents as [AgentDriver, AgentDriver];
    const rel = [asset(st, p.firstBytes, "first"), asset(st, p.secondBytes, "second")];
    const hs = [
      await a0.handle({ skill: st.skill, relPath: rel[0]! }),
      await a1.handle({ skill: st.skill, relPath: rel[1]! }),
    ];
    const idle = latencyStats(await a0.probeRun(10));
    const c0 = await st.links.counters();
    const probe = await a0.probeStart(PROBE_MS);
    const dests = [0, 1].map((i) => join(st.work, `late-${st.seq++}-${i}.bin`));
    const deadlineMs = Math.round(
      (((p.firstBytes + p.secondBytes) * 8) / (p.rateMbit * 1e6)) * 3000 + 60_000,
    );
    const first = a0.download({ ...hs[0]!, dest: dests[0]!, deadlineMs });
    await sleep(p.gapSeconds * 1000);
    const second = a1.download({ ...hs[1]!, dest: dests[1]!, deadlineMs });
    const dls = await Promise.all([first, second]);
    const samples = await a0.probeStop(probe);
    const { drops } = queueDelta(c0.uplink, (await st.links.counters()).uplink);
    dls.forEach((dl, i) => checkDownload(st, rel[i]!, hs[i]!.sha256, dl, dests[i]!));
    const from = dls[1].startedAt;
    const to = Math.min(
      from + p.windowSeconds * 1000,
      ...dls.map((d) => d.startedAt + d.seconds * 1000),
    );
    const windowBytes = dls.map(
      (d) => bytesAt(d.progress, to - d.startedAt) - bytesAt(d.progress, from - d.startedAt),
    );
    const during = latencyStats(samples.filter((s) => s.at >= from && s.at <= to));
    return {
      id,
      build: build.label,
      rateMbit: p.rateMbit,
      rttMs,
      windowBytes,
      windowSeconds: Math.max(0, (to - from) / 1000),
      jain: jainIndex(windowBytes),
      drops,
      idleP95: idle.p95,
      during,
      pulls: dls.map((d) => ({ ok: d.ok, seconds: d.seconds, error: d.error })),
    };
  });
}

/** A plain TCP flow of `bytes` over the uplink's path as it is set, in round trips of `rttMs`. */
async function plainRounds(
  st: St,
  rttMs: number,
  bytes: number,
  ceilingBytes: number,
): Promise<LongAnswerPlain> {
  const flow = await plainFlowOnce(st.links, "uplink", bytes);
  return { seconds: flow.seconds, ...rounds(flow.marks, rttMs, ceilingBytes) };
}

async function longAnswerCase(
  st: St,
  p: NonNullable<PathsPlan["longAnswers"]>,
  form: LongAnswerForm,
  rttMs: number,
  build: Build,
  plains: Map<number, LongAnswerPlain>,
): Promise<LongAnswerCase> {
  const ceilingBytes = DEFAULT_WINDOW * DEFAULT_BINARY_CHUNK_BYTES;
  let plain: LongAnswerPlain | null = null;
  if (form === "packets") {
    await setPath(st.links, null, null, rttMs, "computers");
    // Once per round trip: the same path for every build.
    plain = plains.get(rttMs) ?? (await plainRounds(st, rttMs, p.assetBytes, ceilingBytes));
    plains.set(rttMs, plain);
  } else await setPath(st.links, null, null, 0, "computers");
  const hold = form === "held" ? { computerHoldMs: rttMs } : {};
  return withStack(
    st,
    build,
    async (stack) => {
      const a0 = stack.agents[0]!;
      const relPath = asset(st, p.assetBytes);
      const h = await a0.handle({ skill: st.skill, relPath });
      const dest = join(st.work, `long-${st.seq++}.bin`);
      const dl = await a0.download({ ...h, dest, deadlineMs: p.deadlineSeconds * 1000 });
      checkDownload(st, relPath, h.sha256, dl, dest);
      return {
        id: `answers-${form}-rtt${rttMs}`,
        build: build.label,
        form,
        rttMs,
        assetBytes: p.assetBytes,
        ceilingBytes,
        ok: dl.ok,
        error: dl.error,
        seconds: dl.seconds,
        ...rounds(dl.progress, rttMs, ceilingBytes),
        stats: dl.stats,
        plain,
      };
    },
    hold,
  );
}

export async function runPaths(ctx: Ctx): Promise<PathsData> {
  const plan = ctx.plan.paths;
  const data: PathsData = {
    builds: [],
    plan,
    roundTrips: [],
    steps: [],
    latecomers: [],
    longAnswers: [],
    uploads: [],
    notes: [],
  };
  const empty =
    plan.roundTrips.rttsMs.length === 0 &&
    !plan.step &&
    !plan.latecomer &&
    !plan.longAnswers &&
    !plan.uploads;
  if (empty) return data;
  const unavailable = linksUnavailable();
  if (unavailable) throw new SkipSection(unavailable);
  const builds = sectionBuilds(ctx);
  data.builds = buildLabels(builds);
  const st = await openWorkspace(ctx, "paths", { agents: 2, computers: 2, prefix: "lp" });
  const links = st.links;
  const plains = new Map<number, LongAnswerPlain>();
  try {
    data.roundTrips = await roundTripCases(st, plan.roundTrips, builds);
    for (const build of builds) {
      if (plan.step) {
        ctx.log(`paths: rate step, ${build.label}…`);
        const s = await stepCase(st, plan.step, build);
        data.steps.push(s);
        ctx.log(
          `paths: ${s.id} ${build.label}: ${s.ok ? `${s.seconds.toFixed(1)} s` : `FAILED: ${s.error}`}, ${s.timeouts} timeouts, ${s.wirePerPayloadByte.toFixed(3)} wire B/B, ${s.drops} packets dropped, small requests back in ${s.latencyBackSeconds.toFixed(1)} s, 90% of the new rate in ${s.downToNinetySeconds ?? "–"} s down / ${s.upToNinetySeconds ?? "–"} s up; Mbit/s per second from 2 s before the drop: ${s.perSecondMbit.map((x) => x.toFixed(1)).join(" ")}`,
        );
      }
      for (const rttMs of plan.latecomer?.rttsMs ?? []) {
        ctx.log(`paths: latecomer at ${rttMs} ms, ${build.label}…`);
        const l = await latecomerCase(st, plan.latecomer!, rttMs, build);
        data.latecomers.push(l);
        ctx.log(
          `paths: ${l.id} ${build.label}: Jain ${l.jain.toFixed(3)} over ${l.windowSeconds.toFixed(1)} s (${l.windowBytes.map(formatBytes).join(" / ")}), small requests p95 ${l.during.p95.toFixed(0)} ms (idle ${l.idleP95.toFixed(0)}), ${l.drops} packets dropped`,
        );
      }
      for (const form of plan.longAnswers?.forms ?? []) {
        for (const rttMs of plan.longAnswers!.rttsMs) {
          ctx.log(`paths: answers ${rttMs} ms later (${form}), ${build.label}…`);
          const a = await longAnswerCase(st, plan.longAnswers!, form, rttMs, build, plains);
          data.longAnswers.push(a);
          const plain = a.plain
            ? `; a plain TCP flow: ${roundText(a.plain.roundsToCeiling)}, ${a.plain.seconds.toFixed(1)} s`
            : "";
          ctx.log(
            `paths: ${a.id} ${build.label}: ${a.ok ? `${a.seconds.toFixed(1)} s` : `FAILED: ${a.error}`}, ceiling ${roundText(a.roundsToCeiling)} (per round: ${a.perRound.slice(0, 12).map(formatBytes).join(", ")})${plain}`,
          );
        }
      }
    }
    if (plan.uploads) data.uploads = await uploadPathCases(st, plan.uploads, builds);
  } finally {
    await links.close();
  }
  data.notes.push(
    "Round trips come from the harness's packet delay line: a TUN device in the router namespace of the case's side (router-c for the uplink and the Computers' answers, router-a for the downlink), whose userspace line writes every packet back after half the round trip, so TCP sees the round trip itself. Emulated in userspace (these kernels have no netem); the plain TCP flow on the same path is the ceiling each download is judged against.",
  );
  return data;
}
