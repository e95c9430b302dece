/**
 * The goals of the links section (bench/sections/links.ts), judged on our build's runs: downloads
 * complete with nothing an honest client must not see, binary carriage fills the link, small
 * requests do not wait behind a pull, pulls share a bottleneck fairly, the Server holds little for
 * a slow reader. A goal whose cases the run's plan did not cover (the quick plan) is not measured.
 */
import { absentWhy, judged, notMeasured, sectionData } from "./goal-parts.ts";
import type { Goal, Report } from "./report/types.ts";
import { formatBytes, MiB } from "./lib/stats.ts";
import {
  isClean,
  troubles,
  type FairnessCase,
  type LinkCase,
  type LinkCaseRun,
  type LinksData,
} from "./sections/links.ts";
import { codingRatio, type CodingCase } from "./sections/links-coding.ts";
import type { PathsData, RoundTripCase } from "./sections/paths.ts";
import { FULL_FRAME_PAYLOAD, roundText as round } from "./lib/progress.ts";

/** The rates the goals speak of ("every rate from 1 Mbit/s to unshaped"; null is unshaped). */
const ALL_RATES: Array<number | null> = [1, 2, 5, 20, 200, null];
const DIRECTIONS = ["uplink", "downlink"] as const;
const LATENCY_MARGIN_MS = 250;
const LATENCY_STRETCH_MS = 100;
const QUEUE_BOUND = 2 * MiB;

export function rateWord(rate: number | null): string {
  return rate === null ? "unshaped" : `${rate} Mbit/s`;
}

/** The rate matrix's cases of `rates` in both directions, or the ones the plan lacks. */
function covered(
  d: LinksData,
  rates: Array<number | null>,
): { cases: LinkCase[]; missing: string[] } {
  const cases: LinkCase[] = [];
  const missing: string[] = [];
  for (const direction of DIRECTIONS) {
    for (const rate of rates) {
      const c = d.cases.find((x) => x.direction === direction && x.rateMbit === rate && !x.extra);
      if (c) cases.push(c);
      else missing.push(`${direction} ${rateWord(rate)}`);
    }
  }
  return { cases, missing };
}

function ours<T extends { build: string }>(runs: readonly T[]): T | undefined {
  return runs.find((r) => r.build === "ours");
}

function baselineNote(
  d: LinksData,
  what: (run: LinkCaseRun, c: LinkCase) => string,
  cases: LinkCase[],
): string {
  if (!d.builds.some((b) => b.label === "baseline")) return "";
  const words = cases.flatMap((c) => {
    const run = c.runs.find((r) => r.build === "baseline");
    return run ? [`${c.id} ${what(run, c)}`] : [];
  });
  const commit = d.builds.find((b) => b.label === "baseline")?.commit ?? "?";
  return words.length > 0 ? ` Baseline (${commit}), same run: ${words.join("; ")}.` : "";
}

function completeGoal(r: Report): Goal {
  const id = "links-complete";
  const text =
    "Default downloads complete at every rate from 1 Mbit/s to unshaped, on the Computers' uplink and the Agents' downlink, with zero busy answers, timeouts and resumes";
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const { cases, missing } = covered(d, ALL_RATES);
  if (missing.length > 0)
    return notMeasured(id, text, `the run's plan has no case for ${missing.join(", ")}`);
  // Every case counts here, the fixed-size and delayed ones beside the matrix too.
  const all = [...cases, ...d.cases.filter((c) => c.extra)];
  const runs = all.map((c) => ({ c, run: ours(c.runs) }));
  const bad = runs.filter(({ run }) => !run || !isClean(run));
  return judged({
    id,
    text,
    met: bad.length === 0,
    measured: `${all.length - bad.length} of ${all.length} cases clean${bad.length ? `; ${bad.map(({ c, run }) => `${c.id}: ${run ? troubles(run) : "not run"}`).join("; ")}` : ""}`,
    evidence:
      `One SDK download per case (getSkillRaw + downloadBlob, default options), fresh processes of the shipped build. Busy answers and timeouts are every chunk request's outcome as the Agent's client saw it; resumes from the SDK's PullStats; the Server's a2c_limit_refusals_total and the relay outcomes other than answered over the download.` +
      baselineNote(d, (run) => (isClean(run) ? "clean" : troubles(run)), all),
    why: "the pull keeps more in flight than the path holds: answers queue behind it (at the Computer's socket on a slow uplink, at the Server for a slow reader), their fixed deadlines count the queueing, the Server's unread bound answers busy, and retries run out before the queue drains. Fix: the adaptive pull (bytes in flight from the measured rate and round trip, deadlines from the observed RTT, busy as slow-down).",
  });
}

function utilizationGoal(r: Report): Goal {
  const id = "links-utilization";
  const text =
    "Binary carriage moves ≥ 90% of the link's rate from 2 Mbit/s up (wire bytes per payload byte reported)";
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const { cases, missing } = covered(d, [2, 5, 20, 200]);
  if (missing.length > 0)
    return notMeasured(id, text, `the run's plan has no case for ${missing.join(", ")}`);
  const rows = cases.map((c) => {
    const run = ours(c.runs);
    return { c, run, u: run?.download.utilization ?? 0 };
  });
  const low = rows.filter((x) => x.u < 0.9);
  const word = (run: LinkCaseRun | undefined, u: number): string =>
    run?.download.ok
      ? `${(100 * u).toFixed(1)}% (${run.wire.perPayloadByte.toFixed(3)} wire B/B, ${run.download.carriage ?? "?"})`
      : "failed";
  return judged({
    id,
    text,
    met: low.length === 0,
    measured: rows.map(({ c, run, u }) => `${c.id} ${word(run, u)}`).join("; "),
    evidence:
      "Utilization = the file's bytes × 8 / the download's time / the rate the kernel's tbf holds; wire bytes are everything that left through the shaped queue during the download (frames with every header, retransmissions, the other direction's acks excluded) per payload byte." +
      baselineNote(d, (run) => word(run, run.download.utilization ?? 0), cases),
    why: "the pull either stalls (timeouts, busy, resumes: see the completion goal) or keeps too little in flight for the path's rate × round trip. Compare the wire bytes per payload byte: above ~1.05 for binary means retransmitted or wasted answers.",
  });
}

function latencyGoal(r: Report): Goal {
  const id = "links-latency";
  const text = `During a bulk pull, the same Agent's small requests to the same Computer: p95 ≤ idle p95 + ${LATENCY_MARGIN_MS} ms at every rate from 2 Mbit/s up (goal beyond: + ${LATENCY_STRETCH_MS} ms)`;
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const { cases, missing } = covered(d, [2, 5, 20, 200, null]);
  if (missing.length > 0)
    return notMeasured(id, text, `the run's plan has no case for ${missing.join(", ")}`);
  const added = (run: LinkCaseRun): number =>
    run.latency.during.all.failed > 0
      ? Infinity
      : run.latency.during.all.p95 - run.latency.idle.all.p95;
  const rows = cases.map((c) => ({ c, run: ours(c.runs) }));
  const over = rows.filter(({ run }) => !run || added(run) > LATENCY_MARGIN_MS);
  const stretch = rows.filter(({ run }) => run && added(run) <= LATENCY_STRETCH_MS).length;
  const word = (run: LinkCaseRun): string =>
    `p95 ${run.latency.during.all.p95.toFixed(0)} ms vs idle ${run.latency.idle.all.p95.toFixed(0)} (n ${run.latency.during.all.n}${run.latency.during.all.failed ? `, ${run.latency.during.all.failed} failed` : ""})`;
  return judged({
    id,
    text,
    met: over.length === 0,
    measured: `${rows.length - over.length} of ${rows.length} cases within +${LATENCY_MARGIN_MS} ms, ${stretch} within +${LATENCY_STRETCH_MS} ms; ${rows.map(({ c, run }) => `${c.id} ${run ? word(run) : "not run"}`).join("; ")}`,
    evidence:
      "tool_call of a trivial MCP tool and get_skills, from the download's own Agent to its Computer, sent open loop (a fixed interval, the kinds taking turns) while the download ran; idle: the same requests one after another before it. Another Agent to another Computer on the same link is in the section's table." +
      baselineNote(d, word, cases),
    why: "a small answer waits behind the chunk answers queued ahead of it on the Computer's one connection (and at the Server for a slow reader): the pull's window is fixed in bytes. Fix: the Computer answers small requests first and hands chunk answers to its socket only below a measured bound; the pull keeps its queue under the target delay.",
  });
}

function fairnessGoal(r: Report): Goal {
  const id = "links-fairness";
  const text =
    "Two pulls sharing a bottleneck (one Agent; two Agents; binary beside base64): Jain index ≥ 0.9";
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const kinds = ["same-agent", "two-agents", "binary-base64"] as const;
  const lacking = kinds.filter((k) => !d.fairness.some((c) => c.kind === k));
  if (lacking.length > 0)
    return notMeasured(id, text, `the run's plan has no fairness case ${lacking.join(", ")}`);
  const rows = d.fairness.map((c) => ({ c, run: ours(c.runs) }));
  const low = rows.filter(({ run }) => !run || !(run.jain >= 0.9));
  const word = (c: FairnessCase, run: (typeof c.runs)[number] | undefined): string => {
    if (!run) return `${c.id} not run`;
    const sum = run.pulls.reduce((a, p) => a + p.share, 0);
    return `${c.id} ${run.jain.toFixed(3)} (${run.pulls.map((p) => `${sum > 0 ? ((100 * p.share) / sum).toFixed(0) : "?"}%`).join("/")})`;
  };
  const baseline = d.builds.some((b) => b.label === "baseline")
    ? ` Baseline, same run: ${d.fairness
        .map((c) =>
          word(
            c,
            c.runs.find((x) => x.build === "baseline"),
          ),
        )
        .join("; ")}.`
    : "";
  return judged({
    id,
    text,
    met: low.length === 0,
    measured: rows.map(({ c, run }) => word(c, run)).join("; "),
    evidence: `Both pulls start together; each one's share is what it delivered while both ran (from its progress), base64 counted at 4/3 (what it puts on the link); Jain = (Σx)² / (n Σx²).${baseline}`,
    why: "one pull's window holds most of the bottleneck's queue (answers are served first in, first out), and a base64 chunk is smaller, so the binary pull takes more per round. Fix: every pull to a Computer draws from one path budget round-robin by bytes, and the Computer serves flows round-robin (DRR).",
  });
}

function queueGoal(r: Report): Goal {
  const id = "links-queue";
  const text = `The Server's queued bytes for an honest reader on a 2 Mbit/s downlink stay ≤ ${formatBytes(QUEUE_BOUND)}`;
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const c = d.cases.find((x) => x.direction === "downlink" && x.rateMbit === 2 && !x.extra);
  const run = c && ours(c.runs);
  if (!c || !run) return notMeasured(id, text, "the run's plan has no 2 Mbit/s downlink case");
  const met = run.serverQueue.samples > 0 && run.serverQueue.maxBytes <= QUEUE_BOUND;
  const b = c.runs.find((x) => x.build === "baseline");
  return judged({
    id,
    text,
    met,
    measured: `max ${formatBytes(Math.round(run.serverQueue.maxBytes))} over ${run.serverQueue.samples} samples${b ? `; baseline ${formatBytes(Math.round(b.serverQueue.maxBytes))}` : ""}`,
    evidence: `The Server's a2c_outbound_largest_queue_bytes read from /metrics every ${d.plan.queueSampleMs} ms during the default download of the downlink 2 Mbit/s case.`,
    why:
      run.serverQueue.samples === 0
        ? "no sample could be read from the Server's /metrics during the download."
        : "the pull asks for more than the reader's link drains, so the answers wait at the Server. Fix: the pull's bytes in flight follow the delivery rate it measures (rate × (base RTT + target)).",
  });
}

/** A coding case's words: the on/off ratio of each pair, and the median run of each mode. */
function codingWords(c: CodingCase): string {
  const mid = (mode: "on" | "off"): CodingCase["runs"][number] | undefined => {
    const runs = c.runs.filter((x) => x.mode === mode && x.ok).sort((a, b) => a.mbps - b.mbps);
    return runs[Math.floor(runs.length / 2)];
  };
  const on = mid("on");
  const off = mid("off");
  const ratio = codingRatio(c);
  const side = (run: typeof on, word: string): string =>
    run
      ? `${word} ${run.mbps.toFixed(2)} MB/s ${run.wirePerByte.toFixed(2)} wire B/B`
      : `${word} failed`;
  return `${c.id} ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : "–"} (${side(on, "on")}; ${side(off, "off")}; pairs ${c.ratios.map((x) => x.toFixed(2)).join("/") || "none"})`;
}

const CODING_EVIDENCE =
  "Each case downloads one file with the SDK's default (content_encoding asked) and with compression: false, on fresh processes, the order alternating, the machine's load stated per run in report.json; the ratio is the median of the pairs' on/off resource MB/s. Wire B/B: everything that left through the shaped queue per resource byte.";

/** One goal over the coding cases `pick` selects: every case's median ratio ≥ `floor`. */
function codingGoal(
  r: Report,
  id: string,
  text: string,
  pick: (c: CodingCase) => boolean,
  floor: number,
  why: string,
): Goal {
  const d = sectionData<LinksData>(r.sections.links);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.links, "links"));
  const cases = (d.coding ?? []).filter(pick);
  if (cases.length === 0) return notMeasured(id, text, "the run's plan has no such case");
  const low = cases.filter((c) => !(codingRatio(c) >= floor));
  return {
    id,
    text,
    status: low.length === 0 ? "met" : "missed",
    measured: cases.map(codingWords).join("; "),
    evidence: CODING_EVIDENCE,
    ...(low.length === 0 ? {} : { why }),
  };
}

function codedTextGoal(r: Report): Goal {
  return codingGoal(
    r,
    "links-coded-text",
    "Text assets (JSON, Markdown, CSV, logs) at ≤ 20 Mbit/s arrive ≥ 3× faster with compression than identity",
    (c) => c.content !== "incompressible" && c.rateMbit !== null && c.rateMbit <= 20,
    3,
    "the chunks are coded too small to shrink well (the pull sizes chunks in decoded bytes from its rate: compare the wire B/B with the codecs section's ratio at 16–64 KiB), or the Computer coded at its busy level (a loaded machine). Fix: larger chunks on slow links when they shrink; the codecs section says which level pays.",
  );
}

function codedIncompressibleGoal(r: Report): Goal {
  return codingGoal(
    r,
    "links-coded-incompressible",
    "Incompressible assets with compression on arrive ≥ 0.97× as fast as identity at every rate",
    (c) => c.content === "incompressible" && c.rateMbit !== null,
    0.97,
    "asking costs something where nothing shrinks: the Computer's tries (a 16 KiB sample per content, then a few more) or the answers' two extra fields. Compare the CPU per MB of the Computer on and off in report.json.",
  );
}

function codedLoopbackGoal(r: Report): Goal {
  return codingGoal(
    r,
    "links-coded-loopback",
    "Unshaped (the harness's veth hosts, no link limit): binary assets with compression on ≥ 0.95× of off",
    (c) => c.content === "incompressible" && c.rateMbit === null,
    0.95,
    "on an unlimited link the Computer's CPU sets the pace: a try per content and the sampling are on its path. Compare its CPU per MB on and off.",
  );
}

export function linkGoals(r: Report): Goal[] {
  return [
    completeGoal(r),
    utilizationGoal(r),
    latencyGoal(r),
    fairnessGoal(r),
    queueGoal(r),
    codedTextGoal(r),
    codedIncompressibleGoal(r),
    codedLoopbackGoal(r),
  ];
}

// ---------------------------------------------------------------------------------------------
// Section paths: long paths (bench/sections/paths.ts)

const PATH_LATENCY_MARGIN_MS = 150;
const STEP_LATENCY_MARGIN_MS = 250;

function ceilingGoal(r: Report): Goal {
  const id = "paths-plain-flow";
  const text =
    "The harness itself: a plain TCP flow on every round-trip path moves ≥ 90 % of the link past its slow start (payload bits over the link's rate)";
  const d = sectionData<PathsData>(r.sections.paths);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.paths, "paths"));
  if (d.roundTrips.length === 0)
    return notMeasured(id, text, "the run's plan has no round-trip case");
  const low = d.roundTrips.filter((c) => !((c.ceiling.steadyUtilization ?? 0) >= 0.9));
  return judged({
    id,
    text,
    met: low.length === 0,
    measured: d.roundTrips
      .map(
        (c) =>
          `${c.id} ${(100 * (c.ceiling.steadyUtilization ?? 0)).toFixed(1)}% (min RTT ${c.ceiling.minRttMs ?? "?"} ms)`,
      )
      .join("; "),
    evidence:
      "One TCP connection per case from the direction's sender to its receiver through the shaped queue and the delay line; rate from the receiver's marks past 30 % of the bytes; min RTT is the sender kernel's own (ss -ti). A full frame carries 1448 payload bytes in 1514, so 95.6 % is the most a payload rate can show.",
    why: "the path, not the application, is short: the delay line lagged (a starved machine), or the hosts' TCP buffers are below the bandwidth-delay product. Downloads on those paths are judged against the flow, not the link.",
  });
}

function roundTripGoal(r: Report): Goal {
  const id = "paths-round-trip";
  const text = `At a 100 ms round trip, 20 and 50 Mbit/s, both directions: every binary download ≥ 90 % of the plain TCP flow on the same path (≥ 5 runs, with and without the same Agent's small requests every 300 ms, whose p95 stays ≤ idle + ${PATH_LATENCY_MARGIN_MS} ms); at 200 ms, ≥ 85 %`;
  const d = sectionData<PathsData>(r.sections.paths);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.paths, "paths"));
  const cells = d.roundTrips.filter(
    (c) => (c.rttMs === 100 || c.rttMs === 200) && (c.rateMbit === 20 || c.rateMbit === 50),
  );
  if (cells.length < 8)
    return notMeasured(
      id,
      text,
      "the run's plan has no case for some of 100 and 200 ms at 20 and 50 Mbit/s in both directions",
    );
  const bad: string[] = [];
  for (const c of cells) {
    const floor = c.rttMs === 100 ? 0.9 : 0.85;
    const runs = c.runs.filter((x) => x.build === "ours");
    if (runs.length < 5) bad.push(`${c.id}: ${runs.length} runs`);
    for (const x of runs) {
      if (!x.ok || x.ofCeiling < floor)
        bad.push(`${c.id}: ${x.ok ? `${(100 * x.ofCeiling).toFixed(1)}%` : "failed"}`);
      if (x.during && (x.during.failed > 0 || x.during.p95 > x.idle.p95 + PATH_LATENCY_MARGIN_MS))
        bad.push(
          `${c.id}: small requests p95 ${x.during.p95.toFixed(0)} ms (idle ${x.idle.p95.toFixed(0)})`,
        );
    }
  }
  const word = (c: RoundTripCase): string =>
    `${c.id} ${c.runs
      .filter((x) => x.build === "ours")
      .map(
        (x) =>
          `${x.ok ? (100 * x.ofCeiling).toFixed(0) : "✗"}%${x.during ? ` p95 ${x.during.p95.toFixed(0)}/${x.idle.p95.toFixed(0)}` : ""}`,
      )
      .join(", ")}`;
  // A stack's first download beside the plain flow timed as a download is: from its first byte
  // asked (the connect call's round trip taken off) to its last, slow start and all.
  const firstVsWhole = (c: RoundTripCase): string => {
    const first = c.runs.find((x) => x.build === "ours");
    const askedSeconds = c.ceiling.seconds - (c.ceiling.minRttMs ?? 0) / 1000;
    if (!first?.ok || askedSeconds <= 0) return `${c.id} –`;
    return `${c.id} ${((100 * first.bps) / ((c.ceiling.bytes * 8) / askedSeconds)).toFixed(0)}%`;
  };
  return judged({
    id,
    text,
    met: bad.length === 0,
    measured: `${bad.length === 0 ? "all runs within" : bad.join("; ")} — ${cells.map(word).join("; ")}; each stack's first download over the plain flow timed whole: ${cells.map(firstVsWhole).join(", ")}`,
    evidence:
      "Each run: payload rate of an SDK download with default options over the plain TCP flow's rate past its slow start on the same path just before (bench paths section); small requests p95 during / idle before, ms. The machine's load average is in the section's table. \"Timed whole\": the plain flow's bytes over its time from its first byte asked to its last, slow start included, as a download is timed; the plain flow carries as many bytes as the download (rate × the download's seconds).",
    why: "the pull keeps less in flight than the path's bandwidth-delay product, or more than it plus the router's queue. A path's first read starts from two chunks (later reads start from what it learned), and the sender's TCP, restarting after idle, paces the first chunks out, which reads as queue: startup ends at a fraction of the path until the next round trips show the end was the sender's (D130, D134). Past it, a budget over the path's product plus the router's queue loses packets, and each loss holds the answers a TCP round trip. On hosts running BBR, every TCP connection also stalls for 0.3–1 s about every 10 s (ProbeRTT), which a 10 s download meets and the plain flow's rate past slow start does not count (docs/results.md). The deterministic path-controller tests are where to find the law's part.",
  });
}

function stepGoal(r: Report): Goal {
  const id = "paths-rate-step";
  const text = `A 50 → 2 → 50 Mbit/s step during a 64 MiB download: zero chunk timeouts, ≤ 1.02× the file's bytes on the wire, small requests back under idle + ${STEP_LATENCY_MARGIN_MS} ms within 3 s of the drop, ≥ 90 % of the new rate within 3 s each way`;
  const d = sectionData<PathsData>(r.sections.paths);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.paths, "paths"));
  const s = d.steps.find((x) => x.build === "ours");
  if (!s) return notMeasured(id, text, "the run's plan has no rate-step case");
  const wire = s.wirePerPayloadByte * FULL_FRAME_PAYLOAD;
  const met =
    s.ok &&
    s.timeouts === 0 &&
    wire <= 1.02 &&
    s.latencyBackSeconds <= 3 &&
    s.downToNinetySeconds !== null &&
    s.downToNinetySeconds <= 3 &&
    s.upToNinetySeconds !== null &&
    s.upToNinetySeconds <= 3;
  return judged({
    id,
    text,
    met,
    measured: `${s.ok ? "completed" : `failed: ${s.error}`}; ${s.timeouts} timeouts, ${s.busy} busy; ${wire.toFixed(3)}× the file on the wire; small requests back in ${s.latencyBackSeconds.toFixed(1)} s (worst ${s.worstMs.toFixed(0)} ms, idle p95 ${s.idleP95.toFixed(0)}); 90 % of the new rate ${s.downToNinetySeconds === null ? "never" : `in ${s.downToNinetySeconds.toFixed(1)} s`} down, ${s.upToNinetySeconds === null ? "never" : `in ${s.upToNinetySeconds.toFixed(1)} s`} up`,
    evidence: `The shaped queue's bytes during the download × 1448/1514 (full frames' framing out) per file byte; small requests every 200 ms from the same Agent; "back" is when the last request sent during the slow phase over the threshold had its answer; rate over 1 s windows from the download's progress, against 90 % of what a plain TCP flow carries at the new rate (1448 payload bytes per 1514-byte frame); the time counts until the end of the first window from which every window of that phase carried it.`,
    why: "the bytes in flight at the drop (a budget for the old rate) drain at the new one: small requests wait behind them until they do, and timeouts fire if deadlines learned at the old rate count that wait. The budget follows the drop at its first answer (D110); what remains is the drain of what was already on its way.",
  });
}

function latecomerGoal(r: Report): Goal {
  const id = "paths-latecomer";
  const text = `Two pulls on one 20 Mbit/s uplink, the second started 10 s after the first, at 0 and 100 ms round trip: Jain ≥ 0.9 over the 20 s after the second's start, small requests p95 ≤ idle + ${PATH_LATENCY_MARGIN_MS} ms meanwhile`;
  const d = sectionData<PathsData>(r.sections.paths);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.paths, "paths"));
  const cases = d.latecomers.filter((l) => l.build === "ours");
  if (cases.length === 0) return notMeasured(id, text, "the run's plan has no latecomer case");
  const bad = cases.filter(
    (l) =>
      !(l.jain >= 0.9) || l.during.failed > 0 || l.during.p95 > l.idleP95 + PATH_LATENCY_MARGIN_MS,
  );
  return judged({
    id,
    text,
    met: bad.length === 0,
    measured: cases
      .map(
        (l) =>
          `${l.id} Jain ${l.jain.toFixed(3)} over ${l.windowSeconds.toFixed(1)} s, p95 ${l.during.p95.toFixed(0)} ms (idle ${l.idleP95.toFixed(0)})`,
      )
      .join("; "),
    evidence:
      "Two Agents, each pulling from its own Computer behind the one shaped uplink; bytes each delivered in the window from their progress; small requests every 300 ms from the first pull's Agent.",
    why: "the first pull holds the queue, so the latecomer's base delay reads high and it backs off (or neither leaves room for small requests). Periodic slowdowns that let every flow see the empty queue are the known remedy.",
  });
}

function longAnswersGoal(r: Report): Goal {
  const id = "paths-long-answers";
  const text =
    "Answers delayed by a constant 600 ms and 1.8 s from the first on (unshaped): the pull reaches its window ceiling within 10 round trips";
  const d = sectionData<PathsData>(r.sections.paths);
  if (!d) return notMeasured(id, text, absentWhy(r.sections.paths, "paths"));
  const ours = d.longAnswers.filter((a) => a.build === "ours");
  const cases = ours.filter((a) => a.form === "held");
  if (cases.length === 0) return notMeasured(id, text, "the run's plan has no held-answer case");
  const bad = cases.filter((a) => a.roundsToCeiling === null || a.roundsToCeiling > 10);
  const packets = ours.filter((a) => a.form === "packets");
  return judged({
    id,
    text,
    met: bad.length === 0,
    measured:
      cases
        .map(
          (a) =>
            `${a.id}: ${round(a.roundsToCeiling)} (${a.ok ? `${a.seconds.toFixed(1)} s` : "failed"})`,
        )
        .join("; ") +
      (packets.length === 0
        ? ""
        : `. Beside it, the round trip in the packets: ${packets
            .map(
              (a) =>
                `${a.id}: ${round(a.roundsToCeiling)} (${a.ok ? `${a.seconds.toFixed(1)} s` : "failed"}; a plain TCP flow: ${round(a.plain?.roundsToCeiling ?? null)})`,
            )
            .join("; ")}`),
    evidence:
      "Judged where the Computer holds every answer (a relay in its host holds what the Server sends it for the round trip; TCP on both sides runs at the hosts' own round trip), links unshaped; a round trip is counted from the first answer; the ceiling is the SDK's window × binary chunk ceiling, reached when one round trip delivers ≥ 90 % of it. Beside it, not judged: the same round trip in the packets (the delay line on the Computers' side), where TCP's own slow start bounds any transfer — a plain TCP flow of the same bytes on that path, counted the same way, is its column.",
    why: "the base-delay estimate absorbed the round trip, or each larger chunk's wait read as queue: startup ends at a fraction of the ceiling and the additive step needs dozens of round trips.",
  });
}

export function pathGoals(r: Report): Goal[] {
  return [ceilingGoal(r), roundTripGoal(r), stepGoal(r), latecomerGoal(r), longAnswersGoal(r)];
}
