/**
 * The bench's goals, judged from the measured data. A goal is "met", "missed" or "not measured"
 * (its section did not run); a missed or unmeasured goal carries the why and the fix.
 */
import { absentWhy, judged, notMeasured, sectionData } from "./goal-parts.ts";
import type { SweepData, SweepPoint } from "./sections/sweep.ts";
import type { ComputerCostData } from "./sections/computer-cost.ts";
import { caseLabel, type TransportData } from "./sections/transport.ts";
import { DEPARTURES, gainOf } from "./report/build-transport.ts";
import type { TransportCase } from "./lib/plan.ts";
import { DEFAULT_BASE64_CHUNK_BYTES, DEFAULT_BINARY_CHUNK_BYTES } from "../agent/pull.ts";
import { DEFAULT_BASE64_UPLOAD_CHUNK_BYTES } from "../agent/upload.ts";
import type { UserViewData, UserViewRow } from "./sections/user-view.ts";
import { linkGoals, pathGoals } from "./goals-links.ts";
import { uploadGoals } from "./goals-upload.ts";
import { uploadLinkGoals } from "./goals-upload-links.ts";
import type { Goal, Report } from "./report/types.ts";
import { formatBytes, KiB, median } from "./lib/stats.ts";

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function defaultsGoal(r: Report): Goal {
  const text =
    "Default Agent settings (in base64 spec mode) reach ≥ 90% of the best point of the sweep";
  const sweep = sectionData<SweepData>(r.sections.sweep);
  const sdk = sweep?.sdk.find((x) => x.carriage === "base64");
  const first = sweep?.buffers[0];
  const base64 = first?.points.filter((p) => p.carriage === "base64") ?? [];
  const atBest = sweep?.sdkAtBest ?? [];
  if (!sweep || !sdk || base64.length === 0 || atBest.length === 0) {
    return notMeasured("defaults", text, absentWhy(r.sections.sweep, "sweep") || "no SDK run");
  }
  // Like-for-like: SDK whole reads on both sides (same loop, same final sha256), medians of
  // interleaved reads. The raw sweep only nominates the candidate settings.
  const best = atBest.reduce((a, b) => (b.medianMbps > a.medianMbps ? b : a));
  const ratio = sdk.medianMbps / best.medianMbps;
  const met = ratio >= 0.9;
  const rawBest = base64.reduce((a, b) => (b.mbps > a.mbps ? b : a));
  const bin = sweep.sdk.find((x) => x.carriage === "binary");
  const reads = (x: { perReadMbps: number[] }): string =>
    x.perReadMbps.map((v) => v.toFixed(0)).join("/");
  return judged({
    id: "defaults",
    text,
    met,
    measured: `${pct(ratio)} (SDK defaults median ${sdk.medianMbps.toFixed(1)} MB/s vs SDK at the best sweep point ${formatBytes(best.chunkBytes)} w${best.window} median ${best.medianMbps.toFixed(1)} MB/s)`,
    evidence: `Both sides are SDK whole reads (readBlob loop, final sha256 included), ${sdk.perReadMbps.length} verified reads each, interleaved round by round, median per side (defaults ${reads(sdk)} MB/s; ${atBest.map((x) => `${formatBytes(x.chunkBytes)} w${x.window}: ${reads(x)}`).join("; ")}). Candidates: the ${atBest.length} best raw base64 sweep points (raw best ${formatBytes(rawBest.chunkBytes)} w${rawBest.window} ${rawBest.mbps.toFixed(1)} MB/s, the median of ${r.meta.plan.pointReps} repetitions of ${r.meta.plan.repMs} ms). Judged in the spec's base64 mode (\`binary: false\`, the SDK's other defaults), the carriage of the sweep points it is compared with${bin ? `; SDK defaults (binary carriage): median ${bin.medianMbps.toFixed(1)} MB/s` : ""}.`,
    why: `with the same whole-read loop on both sides, the difference is the settings: the best point uses a bigger chunk or window than the defaults (${formatBytes(sdk.chunkBytes)} w${sdk.window}). Fix: move the defaults to that point if it wins again in the next runs (the capacity model recommends the smallest chunk and window within 90% of the best).`,
  });
}

function ceilingGoal(r: Report, carriage: "base64" | "binary"): Goal {
  const text = `Stack ${carriage} ≥ 85% of the bare ${carriage} ceiling at the same chunk size and window`;
  const sweep = sectionData<SweepData>(r.sections.sweep);
  const pts: SweepPoint[] = (sweep?.buffers ?? [])
    .flatMap((b) => b.points)
    .filter((p) => p.carriage === carriage && p.ratio !== null);
  if (pts.length === 0) {
    return notMeasured(
      `ceiling-${carriage}`,
      text,
      absentWhy(r.sections.sweep, "sweep") ||
        absentWhy(r.sections.ceiling, "ceiling") ||
        "no comparable points",
    );
  }
  const ratios = pts.map((p) => p.ratio ?? 0);
  const med = median(ratios);
  const worst = pts.reduce((a, b) => ((b.ratio ?? 0) < (a.ratio ?? 0) ? b : a));
  const meeting = ratios.filter((x) => x >= 0.85).length;
  const met = med >= 0.85;
  const section = pts.flatMap((p) => (p.sectionRatio == null ? [] : [p.sectionRatio]));
  return judged({
    id: `ceiling-${carriage}`,
    text,
    met,
    measured: `median ${pct(med)} over ${pts.length} points; ${meeting}/${pts.length} points ≥ 85%; worst ${pct(worst.ratio ?? 0)} at ${formatBytes(worst.chunkBytes)} w${worst.window}${section.length ? `; against the ceiling section's table instead: median ${pct(median(section))}` : ""}`,
    evidence: `Each sweep point against the bare relay at the same carriage, chunk size and window: ${r.meta.plan.pointReps} repetitions, each paired with a bare relay repetition right before or after it; a point's ratio is the median of its pairs, and the goal is judged on the median over the points (single points vary ±30–50% on this shared VM).`,
    why: "below 64 KiB the fixed per-chunk costs decide (see the small-chunk goals); from 512 KiB up the Computer's CPU does: a chunk is read, hashed on first pull, framed and, over ws, masked into a fresh frame, whose first-touch page faults cost most of its time at 2 MiB chunks. Compare the Computer's CPU column of the sweep with the bare relay's at the worst point; per-point ratios vary ±30–50% on a shared VM, so judge the median over a full run.",
  });
}

/** The small-chunk sizes whose fixed per-request cost the goal below judges. */
const SMALL_CHUNK_MAX = 32 * KiB;

function smallChunkGoal(r: Report, carriage: "base64" | "binary"): Goal {
  const id = `small-chunks-${carriage}`;
  const text = `Stack ${carriage} at 16–32 KiB chunks ≥ 85% of the bare ${carriage} ceiling (median of those points)`;
  const sweep = sectionData<SweepData>(r.sections.sweep);
  const pts: SweepPoint[] = (sweep?.buffers ?? [])
    .flatMap((b) => b.points)
    .filter((p) => p.carriage === carriage && p.ratio !== null && p.chunkBytes <= SMALL_CHUNK_MAX);
  if (pts.length === 0) {
    return notMeasured(
      id,
      text,
      absentWhy(r.sections.sweep, "sweep") ||
        absentWhy(r.sections.ceiling, "ceiling") ||
        `the sweep ran no chunk size up to ${formatBytes(SMALL_CHUNK_MAX)}`,
    );
  }
  const ratios = pts.map((p) => p.ratio ?? 0);
  const med = median(ratios);
  const met = med >= 0.85;
  const each = pts
    .map((p) => `${formatBytes(p.chunkBytes)} w${p.window} ${pct(p.ratio ?? 0)}`)
    .join(", ");
  return judged({
    id,
    text,
    met,
    measured: `median ${pct(med)} over ${pts.length} points (${each})`,
    evidence: `The sweep's points of ${formatBytes(SMALL_CHUNK_MAX)} or less in ${carriage} carriage, every window and maxHttpBufferSize, each the median of its back-to-back pairs with the bare relay (same driver, carriage, size and window). Here a chunk's bytes are cheap and every process's fixed cost per request decides.`,
    why: "the fixed work per get_blob (handle authentication, the producer's pull-time re-authorization, the snapshot check, validation and bookkeeping in three processes) is a larger share of a small chunk than the bare relay's. Fix: profile the Computer at 16 KiB w1 (its CPU per chunk is in the computerCost section) and remove work that is not a check the protocol requires on each pull.",
  });
}

function perChunkGoal(r: Report): Goal {
  const text =
    "Per-chunk Computer time, 1 MiB vs 1 GiB resource (after the first hash): ratio ≤ 1.2";
  const d = sectionData<ComputerCostData>(r.sections.computerCost);
  if (!d) return notMeasured("per-chunk", text, absentWhy(r.sections.computerCost, "computerCost"));
  const met = d.perChunk.ratio <= 1.2;
  return judged({
    id: "per-chunk",
    text,
    met,
    measured: `ratio ${d.perChunk.ratio.toFixed(2)} (${d.perChunk.big.computerMs.toFixed(3)} ms for ${formatBytes(d.bigBytes)} vs ${d.perChunk.small.computerMs.toFixed(3)} ms for ${formatBytes(d.smallBytes)})`,
    evidence: `Computer's own chunk-time histogram (a2c_computer_blob_chunk_seconds sum/count), ${d.perChunk.small.chunks} chunks each, ${formatBytes(d.chunkBytes)} chunks, window 1; CPU per chunk ${d.perChunk.small.cpuMs.toFixed(3)} vs ${d.perChunk.big.cpuMs.toFixed(3)} ms.`,
    why: "a per-chunk cost grows with the resource (re-hashing or reading beyond the chunk). Fix: make sure the hash cache hits (content signature) and reads are positional.",
  });
}

function perChunkSkillMdGoal(r: Report): Goal {
  const text =
    "Per-chunk Computer time, 1 MiB vs 64 MiB SKILL.md body (after the first derivation): ratio ≤ 1.2";
  const d = sectionData<ComputerCostData>(r.sections.computerCost)?.skillMd;
  if (!d)
    return notMeasured(
      "per-chunk-skill-md",
      text,
      absentWhy(r.sections.computerCost, "computerCost") || "no SKILL.md measurement",
    );
  const met = d.ratio <= 1.2;
  return judged({
    id: "per-chunk-skill-md",
    text,
    met,
    measured: `ratio ${d.ratio.toFixed(2)} (${d.big.computerMs.toFixed(3)} ms for ${formatBytes(d.bigBytes)} vs ${d.small.computerMs.toFixed(3)} ms for ${formatBytes(d.smallBytes)})`,
    evidence: `Computer's own chunk-time histogram, ${d.small.chunks} chunks each, in the same rounds as the raw-file goal (64 KiB chunks, window 1); CPU per chunk ${d.small.cpuMs.toFixed(3)} vs ${d.big.cpuMs.toFixed(3)} ms; first derivation of the ${formatBytes(d.bigBytes)} body ${d.firstDeriveSeconds.toFixed(2)} s.`,
    why: "a chunk of a derived resource costs more with its size: the body is derived again per request (its content signature keeps changing, or the derived store evicted it). Fix: check a2c_computer_derived_productions_total stays at one per content.",
  });
}

function eldGoal(r: Report): Goal {
  const text =
    "Computer event-loop delay p99 < 20 ms while hashing a 1 GiB file and serving others";
  const d = sectionData<ComputerCostData>(r.sections.computerCost);
  if (!d) return notMeasured("eld", text, absentWhy(r.sections.computerCost, "computerCost"));
  const e = d.eld;
  const met = e.p99Ms < 20;
  const off = e.runs.filter((x) => x.hashNice === 0);
  const offP99 = off.length > 0 ? Math.max(...off.map((x) => x.p99Ms)) : NaN;
  return judged({
    id: "eld",
    text,
    met,
    measured: `delay p99 ${e.p99Ms.toFixed(1)} ms, max ${e.maxMs.toFixed(1)} ms over ${e.seconds.toFixed(1)} s (raw ${e.resolutionMs} ms timer interval p99 ${e.intervalP99Ms.toFixed(1)} ms; hash of ${formatBytes(d.bigBytes)} took ${e.hashSeconds.toFixed(2)} s at hash nice +${e.hashNice}); baseline without hashing p99 ${e.baselineP99Ms.toFixed(1)} ms; hash threads at nice +0: p99 ${offP99.toFixed(1)} ms`,
    evidence: `perf_hooks.monitorEventLoopDelay({ resolution: ${e.resolutionMs} }) inside the Computer process over the hash (mtime bump to the first verified chunk of the new content); the delay is the recorded tick interval minus the ${e.resolutionMs} ms resolution (reports before 2026-12-03 compared the raw interval with 20 ms); worse of ${e.runs.length - off.length} runs at the default hash nice; meanwhile a second pull of the 1 MiB file ran ${e.otherChunks} chunks (p99 ${e.otherP99Ms.toFixed(1)} ms)${d.bigBytes < 1024 ** 3 ? `; quick run: ${formatBytes(d.bigBytes)} stands in for 1 GiB` : ""}.`,
    why:
      e.baselineP99Ms >= 20
        ? `the baseline without any hashing is already p99 ${e.baselineP99Ms.toFixed(1)} ms: the delay is CPU contention on the shared 2-core machine (load average in the header), not the hash alone. Re-run on an idle machine to judge this goal.`
        : "hashing competes with the main thread for the CPU: the pool's hash thread (computer/workers/hash-file.ts) runs at a nice offset (--hash-nice); check the threads column of the Computer cost table shows it applied, and whether get_skill or the engine hashed on the main thread (engine hashes: inline).",
  });
}

function userViewRow(d: UserViewData, id: UserViewRow["id"]): UserViewRow | undefined {
  return d.rows.find((x) => x.id === id);
}

const mbpsOf = (row: UserViewRow | undefined): string =>
  row
    ? `${row.mbps.median.toFixed(1)} MB/s (${row.mbps.reps.map((x) => x.toFixed(0)).join("/")}), ${row.carriage} carriage`
    : "–";

/**
 * What the CLI may take beyond the bare relay for the same file (D67): the work it must do that
 * the relay does not. It starts node (measured in the same run), hashes the whole file once
 * (sha256 on one core of the reference machine: 1.8 GB/s, so at least this) and writes it (into
 * the page cache, a copy: at least this; the kernel writes dirty pages back while the transfer
 * runs, so the fsync at the end flushes a remainder).
 */
const SHA256_BYTES_PER_SEC = 1e9;
const WRITE_BYTES_PER_SEC = 1e9;

function cliVsBareGoal(r: Report): Goal {
  const d = sectionData<UserViewData>(r.sections.userView);
  const allowance = (bytes: number, start: number): number =>
    start + bytes / SHA256_BYTES_PER_SEC + bytes / WRITE_BYTES_PER_SEC;
  const text = `CLI download to a file, process start included, takes no longer than the bare binary relay reads it into memory plus node's start, one sha256 pass and one write of the file (each at 1 GB/s${d ? `: ${allowance(d.fileBytes, d.cliStartSeconds.median).toFixed(2)} s for ${formatBytes(d.fileBytes)}` : ""}); same file, same run`;
  if (!d) return notMeasured("cli-vs-bare", text, absentWhy(r.sections.userView, "userView"));
  const cli = userViewRow(d, "cli-binary");
  const bare = userViewRow(d, "bare-binary");
  if (!cli || !bare) return notMeasured("cli-vs-bare", text, "the section has no CLI or bare row");
  const beyond = cli.seconds.reps.map((s, i) => s - bare.seconds.reps[i]!);
  const most = allowance(d.fileBytes, d.cliStartSeconds.median);
  const met = median(beyond) <= most;
  return judged({
    id: "cli-vs-bare",
    text,
    met,
    measured: `${median(beyond).toFixed(2)} s beyond the bare relay (per round ${beyond.map((x) => x.toFixed(2)).join(", ")}; ${pct(d.cliVsBare.median)} of its rate): CLI ${mbpsOf(cli)} vs bare relay ${mbpsOf(bare)}`,
    evidence: `Section userView: ${formatBytes(d.fileBytes)} skill file, ${d.rounds} interleaved rounds, the median of the per-round differences. The CLI (the a2c-agent bin with its defaults, node ${d.cliNodeFlags.join(" ")}: skill … -o FILE) is timed from spawn to exit (process start alone: median ${d.cliStartSeconds.median.toFixed(2)} s); the bare socket.io relay reads the same file into memory through the bench's chunk driver at the SDK's default binary chunk size and window.`,
    why: `the CLI's path takes more than its own work explains. Compare its row with the SDK's in-memory read in the same section: if the SDK kept its rate, the cost is the CLI's own (process start ${d.cliStartSeconds.median.toFixed(2)} s, connect and join, the file writes and the fsync); if both fell, the pull did.`,
  });
}

/**
 * What the adaptive pull must not cost on loopback: the sweep's median ratios to the bare relay
 * stay where they were before it (base64 ≥ 1.0×, binary ≥ 0.95×), stricter than the ceiling goals.
 */
function loopbackRatiosGoal(r: Report): Goal {
  const text =
    "Loopback: the sweep's median ratio to the bare relay stays as before the adaptive pull (base64 ≥ 1.0×, binary ≥ 0.95×)";
  const sweep = sectionData<SweepData>(r.sections.sweep);
  const floors = { base64: 1.0, binary: 0.95 } as const;
  const medians = (["base64", "binary"] as const).map((carriage) => {
    const ratios = (sweep?.buffers ?? [])
      .flatMap((b) => b.points)
      .filter((p) => p.carriage === carriage && p.ratio !== null)
      .map((p) => p.ratio ?? 0);
    return { carriage, n: ratios.length, median: median(ratios) };
  });
  if (medians.some((m) => m.n === 0)) {
    return notMeasured(
      "loopback-ratios",
      text,
      absentWhy(r.sections.sweep, "sweep") ||
        absentWhy(r.sections.ceiling, "ceiling") ||
        "no comparable points",
    );
  }
  const low = medians.filter((m) => m.median < floors[m.carriage]);
  return judged({
    id: "loopback-ratios",
    text,
    met: low.length === 0,
    measured: medians
      .map((m) => `${m.carriage} ${m.median.toFixed(2)}× over ${m.n} points`)
      .join("; "),
    evidence:
      "The same per-point ratios the ceiling goals judge (each point against the bare relay measured right next to it, median of its pairs); here their median per carriage against the figures measured before the adaptive pull.",
    why: `${low.map((m) => m.carriage).join(" and ")} below the floor: on loopback the pull must reach its ceiling within a few round trips and keep it. Compare with the Computer's CPU column of the sweep and the sdk rows; single runs on a shared machine vary ±30–50% per point, so judge a full run on an idle machine.`,
  });
}

/** What a bar judges: its role's CPU per MB (the default), or the Agent's CPU per MB. */
type BarFigure = "cpu" | "agent";

const FIGURE_WORDS: Record<BarFigure, string> = {
  cpu: "less CPU per MB of its role",
  agent: "less Agent CPU per MB",
};

/**
 * What each fast path on by default must show, in its own run, to stay on (D51, D102,
 * D114, D116, D133): the point it was made for, the figure it serves there and the least gain
 * that counts as paying.
 */
const FAST_PATH_BARS: readonly (TransportCase & {
  config: string;
  figure?: BarFigure;
  least: number;
})[] = [
  {
    config: "without raw_acks",
    direction: "get",
    carriage: "base64",
    chunkBytes: 64 * KiB,
    least: 1.1,
  },
  {
    config: "without raw_uploads",
    direction: "put",
    carriage: "base64",
    chunkBytes: DEFAULT_BASE64_UPLOAD_CHUNK_BYTES,
    least: 1.1,
  },
  {
    config: "without batch_writes",
    direction: "get",
    carriage: "binary",
    chunkBytes: 16 * KiB,
    least: 1.05,
  },
  {
    // Judged on the Computer's own CPU, as every other path on its role's (D133): at 16 KiB the
    // pull waits on the Server's and the Agent's time per chunk, so what it saves the Computer
    // shows in MB/s only where the Computer is the slowest hop.
    config: "without computer batch_writes",
    direction: "get",
    carriage: "binary",
    chunkBytes: 16 * KiB,
    least: 1.05,
  },
  {
    config: "without agent upload_text",
    direction: "put",
    carriage: "base64",
    chunkBytes: DEFAULT_BASE64_UPLOAD_CHUNK_BYTES,
    figure: "agent",
    least: 1.1,
  },
];

/**
 * The SDK's defaults (pulls: binary 512 KiB, base64 64 KiB; a base64 upload: 64 KiB): a fast
 * path that acts there must save its role's CPU per MB (gain ≥ 1); one that does not act there
 * runs stock code by its own rule.
 */
const DEFAULT_CASES: readonly TransportCase[] = [
  { direction: "get", carriage: "binary", chunkBytes: DEFAULT_BINARY_CHUNK_BYTES },
  { direction: "get", carriage: "base64", chunkBytes: DEFAULT_BASE64_CHUNK_BYTES },
  { direction: "put", carriage: "base64", chunkBytes: DEFAULT_BASE64_UPLOAD_CHUNK_BYTES },
];

/** Section transport's second default configuration (bench/sections/transport.ts). */
const SAME_AGAIN = "default again";

function fastPathsGoal(r: Report): Goal {
  const named = (config: string): string => config.replace(/^without /, "");
  const text = `Each fast path on by default pays where it was made for (${FAST_PATH_BARS.map((b) => `${named(b.config)} ≥ ×${b.least} ${FIGURE_WORDS[b.figure ?? "cpu"]} at ${caseLabel(b)}`).join("; ")}), and each that acts at the SDK's defaults (${DEFAULT_CASES.map(caseLabel).join(", ")}) saves its role CPU there`;
  const d = sectionData<TransportData>(r.sections.transport);
  if (!d) return notMeasured("fast-paths", text, absentWhy(r.sections.transport, "transport"));
  // A fast path this build does not have (no such configuration ran) is shown, not judged.
  const ran = (config: string): boolean => d.configs.some((c) => c.id === config);
  const gain = (
    config: string,
    c: TransportCase,
    figure: BarFigure = "cpu",
    from = config,
  ): number | null => {
    const dep = DEPARTURES.find((x) => x.config === config);
    return dep ? (gainOf(d, { ...dep, config: from }, c)?.[figure] ?? null) : null;
  };
  // The same figure of the default run again: what two identical stacks differ by there.
  const spread = (b: (typeof FAST_PATH_BARS)[number]): string => {
    const v = ran(SAME_AGAIN) ? gain(b.config, b, b.figure, SAME_AGAIN) : null;
    return v === null ? "" : ` (${SAME_AGAIN} ×${v.toFixed(2)})`;
  };
  const all = [
    ...FAST_PATH_BARS.map((b) => ({
      config: b.config,
      label: `${named(b.config)} at ${caseLabel(b)}`,
      value: gain(b.config, b, b.figure),
      least: b.least,
      spread: spread(b),
    })),
    ...DEPARTURES.flatMap((dep) =>
      DEFAULT_CASES.filter((c) => dep.actsOn(c)).map((c) => ({
        config: dep.config,
        label: `${named(dep.config)} at the default ${caseLabel(c)}`,
        value: gain(dep.config, c),
        least: 1,
        spread: "",
      })),
    ),
  ].map((x) => ({ ...x, met: x.value !== null && x.value >= x.least }));
  const checks = all.filter((x) => ran(x.config));
  const absent = [...new Set(all.filter((x) => !ran(x.config)).map((x) => named(x.config)))];
  const idle = DEPARTURES.filter((dep) => ran(dep.config)).flatMap((dep) =>
    DEFAULT_CASES.filter((c) => !dep.actsOn(c)).map((c) => {
      const v = gain(dep.config, c);
      return `${named(dep.config)} at ${caseLabel(c)} ${v === null ? "–" : `×${v.toFixed(2)}`}`;
    }),
  );
  const met = checks.every((x) => x.met);
  const words = checks
    .map(
      (x) =>
        `${x.label} ${x.value === null ? "not measured" : `×${x.value.toFixed(2)}`}${x.spread}`,
    )
    .join(", ");
  const notInBuild =
    absent.length > 0
      ? `; not measured (no such fast path in this build, so no configuration without it ran): ${absent.join(", ")}`
      : "";
  return judged({
    id: "fast-paths",
    text,
    met,
    measured: `${words}; not acting at the defaults (stock code there, unjudged): ${idle.join(", ")}${notInBuild}`,
    evidence: `Section transport: the default stack against the default without that fast path (its own Server process, the same Computer and Agent processes, its own AgentClients), the same SDK pull or upload in the same rounds (${d.rounds}), median of per-round ratios (CPU per MB of the fast path's role, or MB/s; the Agent's CPU includes the probe Agent's, in the same process); beside each bar, the same figure of \`${SAME_AGAIN}\` (the default once more, through a Server of its own: what two identical stacks differ by; D118); the stock-transport rows are beside them in the section.`,
    why: `missed: ${checks
      .filter((x) => !x.met)
      .map((x) => x.label)
      .join(
        ", ",
      )}. A fast path that no longer pays its bar costs a departure from another package's stock behaviour for nothing: re-run on an idle machine, and if it still misses, limit it to where it pays or remove it (D51, D102).`,
  });
}

export function evaluateGoals(r: Report): Goal[] {
  return [
    defaultsGoal(r),
    ceilingGoal(r, "base64"),
    ceilingGoal(r, "binary"),
    smallChunkGoal(r, "base64"),
    smallChunkGoal(r, "binary"),
    perChunkGoal(r),
    perChunkSkillMdGoal(r),
    eldGoal(r),
    cliVsBareGoal(r),
    ...uploadGoals(r),
    loopbackRatiosGoal(r),
    ...linkGoals(r),
    ...pathGoals(r),
    ...uploadLinkGoals(r),
    fastPathsGoal(r),
  ];
}
