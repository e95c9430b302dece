/** The paths section's part of the report: round trips beside their plain TCP flow, the rate step, the latecomer, long answers, uploads. */
import { formatBytes } from "../lib/stats.ts";
import type { PathsData } from "../sections/paths.ts";
import type { LatencyStats } from "../sections/links.ts";
import { headedTable, type Block } from "./doc.ts";
import { latencyMs as ms, pct } from "./format.ts";

const mbit = (bps: number): string => (bps / 1e6).toFixed(2);
const lat = (s: LatencyStats | null): string =>
  s === null
    ? "none sent"
    : s.n === 0
      ? `all ${s.failed} failed`
      : `${ms(s.p50)} / ${ms(s.p95)} (n ${s.n}${s.failed ? `, ${s.failed} failed` : ""})`;
const secs = (x: number | null): string => (x === null ? "never" : `${x.toFixed(1)} s`);

export function pathsBlocks(d: PathsData): Block[] {
  const blocks: Block[] = [];
  if (d.roundTrips.length > 0) {
    blocks.push(
      {
        kind: "heading",
        level: 3,
        text: "Round trips: downloads beside a plain TCP flow on the same path",
      },
      {
        kind: "para",
        text: `Each case shapes one direction with tbf (burst max(10 frames, 4 ms), latency 100 ms) and sets the delay line on that side to half the round trip; the plain TCP flow (rate × ${d.plan.roundTrips.ceilingSeconds} s, the kernel's congestion control) runs first, then SDK downloads of clamp(rate × ${d.plan.roundTrips.seconds} s, ${formatBytes(d.plan.roundTrips.minAssetBytes)}, ${formatBytes(d.plan.roundTrips.maxAssetBytes)}) with default options on fresh processes. "Of the plain flow": the download's payload rate over the flow's payload rate past its slow start. Small requests: the same Agent's tool_call / get_skills every ${300} ms during the download, p50 / p95 ms; idle: one after another before it.`,
      },
      {
        kind: "table",
        head: [
          "case",
          "plain flow: past slow start / whole, min RTT, packets dropped",
          "file",
          "build",
          "download",
          "of the link",
          "of the plain flow",
          "wire B/B",
          "packets dropped",
          "timeouts / busy",
          "small requests idle",
          "during",
          "load",
        ],
        rows: d.roundTrips.flatMap((c) =>
          c.runs.map((r) => [
            c.id,
            `${pct(c.ceiling.steadyUtilization ?? 0)} / ${pct(c.ceiling.utilization ?? 0)}, ${c.ceiling.minRttMs ?? "?"} ms (${c.ceiling.congestion ?? "?"}), ${c.ceiling.drops}`,
            formatBytes(c.assetBytes),
            r.build,
            r.ok ? `${r.seconds.toFixed(1)} s, ${mbit(r.bps)} Mbit/s` : `FAILED: ${r.error ?? "?"}`,
            r.utilization === null ? "–" : pct(r.utilization),
            pct(r.ofCeiling),
            Number.isFinite(r.wirePerPayloadByte) ? r.wirePerPayloadByte.toFixed(3) : "–",
            String(r.drops),
            `${r.timeouts} / ${r.busy}`,
            lat(r.idle),
            lat(r.during),
            r.loadAvg.map((x) => x.toFixed(1)).join(" "),
          ]),
        ),
      },
    );
  }
  if (d.steps.length > 0) {
    blocks.push(
      ...headedTable(
        "A rate step during a download",
        [
          "case",
          "build",
          "file",
          "download",
          "timeouts / busy",
          "wire B/B",
          "packets dropped",
          "small requests over idle p95 + 250 ms until",
          "worst",
          "≥ 90 % of the new rate held from: down / up",
          "payload Mbit/s per second, from 2 s before the drop",
        ],
        d.steps.map((s) => [
          s.id,
          s.build,
          formatBytes(s.assetBytes),
          s.ok ? `${s.seconds.toFixed(1)} s` : `FAILED: ${s.error ?? "?"}`,
          `${s.timeouts} / ${s.busy}`,
          s.wirePerPayloadByte.toFixed(3),
          String(s.drops),
          `${s.latencyBackSeconds.toFixed(1)} s after the drop (idle p95 ${ms(s.idleP95)} ms)`,
          `${ms(s.worstMs)} ms`,
          `${secs(s.downToNinetySeconds)} / ${secs(s.upToNinetySeconds)}`,
          s.perSecondMbit.map((x) => x.toFixed(1)).join(" "),
        ]),
      ),
    );
  }
  if (d.latecomers.length > 0) {
    blocks.push(
      ...headedTable(
        "A latecomer on a shared uplink",
        [
          "case",
          "build",
          "bytes in the window (first / second)",
          "window",
          "Jain",
          "packets dropped",
          "small requests idle p95",
          "during (p50 / p95)",
        ],
        d.latecomers.map((l) => [
          l.id,
          l.build,
          l.windowBytes.map(formatBytes).join(" / "),
          `${l.windowSeconds.toFixed(1)} s`,
          l.jain.toFixed(3),
          String(l.drops),
          `${ms(l.idleP95)} ms`,
          lat(l.during),
        ]),
      ),
    );
  }
  if (d.longAnswers.length > 0) {
    blocks.push(
      ...headedTable(
        "Answers a constant round trip later (unshaped)",
        [
          "case",
          "build",
          "round trip",
          "file",
          "download",
          "ceiling (window × chunk)",
          "reached in round",
          "bytes per round trip (first 12)",
          "plain TCP flow: reached in round, whole",
        ],
        d.longAnswers.map((a) => [
          a.id,
          a.build,
          a.form === "held" ? "the Computer holds it" : "in the packets",
          formatBytes(a.assetBytes),
          a.ok ? `${a.seconds.toFixed(1)} s` : `FAILED: ${a.error ?? "?"}`,
          formatBytes(a.ceilingBytes),
          a.roundsToCeiling === null ? "never" : String(a.roundsToCeiling),
          a.perRound
            .slice(0, 12)
            .map((b) => formatBytes(Math.round(b)))
            .join(", "),
          a.plain ? `${a.plain.roundsToCeiling ?? "never"}, ${a.plain.seconds.toFixed(1)} s` : "–",
        ]),
      ),
    );
  }
  if (d.uploads.length > 0) blocks.push(...uploadBlocks(d));
  if (blocks.length === 0)
    blocks.push({ kind: "para", text: "The run's plan has no case of this section." });
  return blocks;
}

/** Uploads on a shaped Agent uplink and to a Computer behind a slow downlink. */
function uploadBlocks(d: PathsData): Block[] {
  return [
    { kind: "heading", level: 3, text: "Uploads beside a plain TCP flow on the same path" },
    {
      kind: "para",
      text: `SDK uploadBlob with default options (hashing the source included) of clamp(rate × ${d.plan.uploads?.seconds ?? "?"} s, ${formatBytes(d.plan.uploads?.minAssetBytes ?? 0)}, ${formatBytes(d.plan.uploads?.maxAssetBytes ?? 0)}) from agent-0 to computer-0, on fresh processes after a plain TCP flow on the same path (Agent → Server for the Agent's uplink, Server → Computer for the Computer's downlink); the delay line on the Agents' side. Held: the Server's largest per-connection queue (its session meter) and, beside it, the kernel's Send-Q of the Server toward the Computer and of the Agent toward the Server, each the most seen in samples every 100 ms.`,
    },
    {
      kind: "table",
      head: [
        "case",
        "plain flow past slow start, min RTT",
        "file",
        "upload",
        "of the link",
        "of the plain flow",
        "wire B/B",
        "packets dropped",
        "busy / rewinds / restarts",
        "small requests idle",
        "during",
        "Server queue / Send-Q",
        "Agent Send-Q",
        "load",
      ],
      rows: d.uploads.map((c) => [
        c.id,
        `${pct(c.ceiling.steadyUtilization ?? 0)}, ${c.ceiling.minRttMs ?? "?"} ms`,
        formatBytes(c.assetBytes),
        c.ok
          ? `${c.seconds.toFixed(1)} s, ${mbit(c.bps)} Mbit/s (${c.carriage ?? "?"})`
          : `FAILED: ${c.error ?? "?"}`,
        pct(c.utilization),
        pct(c.ofCeiling),
        c.wirePerPayloadByte.toFixed(3),
        String(c.drops),
        `${String(c.stats.busy ?? 0)} / ${String(c.stats.rewinds ?? 0)} / ${String(c.stats.restarts ?? 0)}`,
        lat(c.idle),
        lat(c.during),
        `${formatBytes(c.serverHeldMaxBytes)} / ${formatBytes(c.serverSendQMaxBytes)}`,
        formatBytes(c.agentSendQMaxBytes),
        c.loadAvg.map((x) => x.toFixed(1)).join(" "),
      ]),
    },
  ];
}
