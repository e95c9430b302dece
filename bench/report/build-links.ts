/** The links section's part of the report: downloads, small requests, fairness, sizing. */
import { formatBytes } from "../lib/stats.ts";
import { rateWord } from "../goals-links.ts";
import {
  isClean,
  troubles,
  type LatencyStats,
  type LinkCase,
  type LinkCaseRun,
  type LinksData,
} from "../sections/links.ts";
import { headedTable, type Block } from "./doc.ts";
import { codingRatio, type CodingRun } from "../sections/links-coding.ts";
import { latencyMs as ms, pct } from "./format.ts";

function lat(s: LatencyStats): string {
  if (s.n === 0) return s.failed ? `all ${s.failed} failed` : "–";
  return `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.max)} (n ${s.n}${s.failed ? `, ${s.failed} failed` : ""})`;
}

function shapeWords(c: Pick<LinkCase, "shape" | "oneWayDelayMs">): string {
  const s = c.shape;
  const delay = c.oneWayDelayMs ? `; +${2 * c.oneWayDelayMs} ms RTT emulated in userspace` : "";
  if (s.qdisc !== "tbf") return `unshaped (pfifo counts)${delay}`;
  return `tbf ${((s.rateBitsPerSecond ?? 0) / 1e6).toFixed(0)} Mbit/s, burst ${s.burstBytes ?? "?"} B, latency ${s.latencyMs ?? "?"} ms${delay}`;
}

function result(run: LinkCaseRun): string {
  const d = run.download;
  if (!d.ok) return `FAILED after ${d.seconds.toFixed(1)} s: ${d.error ?? "?"}`;
  const u = d.utilization === null ? "" : `, ${pct(d.utilization)}`;
  return `${d.seconds.toFixed(1)} s, ${d.mbps.toFixed(2)} MB/s${u} (${d.carriage ?? "?"})`;
}

function counts(run: LinkCaseRun): string {
  return isClean(run) ? "none" : troubles(run).replace(/^failed: [^;]*;? ?/, "") || "none";
}

function downloadRows(d: LinksData): string[][] {
  return d.cases.flatMap((c) =>
    c.runs.map((run) => [
      c.id,
      shapeWords(c),
      formatBytes(c.assetBytes),
      run.build,
      result(run),
      Number.isFinite(run.wire.perPayloadByte) ? run.wire.perPayloadByte.toFixed(3) : "–",
      String(run.wire.drops),
      counts(run),
      formatBytes(Math.round(run.serverQueue.maxBytes)),
      run.loadAvg.map((x) => x.toFixed(1)).join(" "),
    ]),
  );
}

function latencyRows(d: LinksData): string[][] {
  return d.cases.flatMap((c) =>
    c.runs.map((run) => [
      c.id,
      run.build,
      lat(run.latency.idle.all),
      lat(run.latency.during.tool_call),
      lat(run.latency.during.get_skills),
      lat(run.latency.idleOther.all),
      lat(run.latency.duringOther.all),
      `${run.probeIntervalMs} ms`,
    ]),
  );
}

function fairnessRows(d: LinksData): string[][] {
  return d.fairness.flatMap((c) =>
    c.runs.map((run) => {
      const sum = run.pulls.reduce((a, p) => a + p.share, 0);
      return [
        c.id,
        `tbf ${((c.shape.rateBitsPerSecond ?? 0) / 1e6).toFixed(0)} Mbit/s, burst ${c.shape.burstBytes ?? "?"} B, latency ${c.shape.latencyMs ?? "?"} ms`,
        `2 × ${formatBytes(c.assetBytes)}`,
        run.build,
        run.pulls
          .map(
            (p) =>
              `agent ${p.agent} ${p.carriage ?? "?"} ${sum > 0 ? ((100 * p.share) / sum).toFixed(0) : "?"}%${p.ok ? "" : ` (failed: ${p.error ?? "?"})`}`,
          )
          .join(", "),
        run.jain.toFixed(3),
        `${run.overlapSeconds.toFixed(1)} s`,
      ];
    }),
  );
}

/** One row per rate: what a user can expect on that link, from our build's figures. */
function sizingRows(d: LinksData, build: string): string[][] {
  const rates = [...new Set(d.cases.filter((c) => !c.extra).map((c) => c.rateMbit))];
  const cell = (rate: number | null, direction: string): string[] => {
    const c = d.cases.find((x) => x.rateMbit === rate && x.direction === direction && !x.extra);
    const run = c?.runs.find((r) => r.build === build);
    if (!run) return ["–", "–"];
    const u = run.download.ok
      ? run.download.utilization === null
        ? `${run.download.mbps.toFixed(1)} MB/s`
        : pct(run.download.utilization)
      : "failed";
    return [
      `${u}${isClean(run) ? "" : ` (${counts(run)})`}`,
      `${ms(run.latency.during.all.p95)} ms (idle ${ms(run.latency.idle.all.p95)})`,
    ];
  };
  return rates.map((rate) => [rateWord(rate), ...cell(rate, "uplink"), ...cell(rate, "downlink")]);
}

function codingRows(d: LinksData): string[][] {
  const cpu = (x: CodingRun["cpuMsPerMb"]): string =>
    `${x.computer.toFixed(1)} / ${x.agent.toFixed(1)} / ${x.server.toFixed(1)}`;
  return (d.coding ?? []).map((c) => {
    const of = (mode: "on" | "off"): CodingRun[] => c.runs.filter((r) => r.mode === mode);
    const words = (runs: CodingRun[], codings: boolean): string =>
      runs
        .map((r) =>
          r.ok
            ? `${r.mbps.toFixed(2)}, ${r.wirePerByte.toFixed(3)}` +
              (codings
                ? `, ${Object.entries(r.codings)
                    .map(([k, v]) => `${k} ${v}`)
                    .join(" ")}`
                : "")
            : `failed: ${r.error ?? "?"}`,
        )
        .join("; ");
    const ratio = codingRatio(c);
    return [
      c.id,
      shapeWords({ shape: c.shape, oneWayDelayMs: 0 }),
      formatBytes(c.assetBytes),
      `${Number.isFinite(ratio) ? ratio.toFixed(2) : "–"}× (${c.ratios.map((x) => x.toFixed(2)).join(", ")})`,
      words(of("on"), true),
      words(of("off"), false),
      of("on")
        .map((r) => cpu(r.cpuMsPerMb))
        .join("; "),
      of("off")
        .map((r) => cpu(r.cpuMsPerMb))
        .join("; "),
      String(c.runs.reduce((n, r) => n + r.setbacks, 0)),
    ];
  });
}

/** What a user can expect on a link of each rate, from our build's runs: the report's summary. */
export function linkSizingBlocks(d: LinksData): Block[] {
  return [
    { kind: "heading", level: 3, text: "Sizing for a link" },
    {
      kind: "para",
      text: "What a default download reaches (utilization: payload bits per second over the link's rate) and how long the same Agent's small requests to that Computer wait while it runs (p95), per rate, on our build; the cases, every count and the fairness runs: section \"Real links\" below.",
    },
    {
      kind: "table",
      head: [
        "link rate",
        "Computer uplink: utilization",
        "uplink: small requests p95 during a pull",
        "Agent downlink: utilization",
        "downlink: small requests p95 during a pull",
      ],
      rows: sizingRows(d, "ours"),
    },
  ];
}

export function linksBlocks(d: LinksData): Block[] {
  const builds = d.builds.map((b) => `${b.label} (${b.commit ?? "commit unknown"})`).join(", ");
  const blocks: Block[] = [
    {
      kind: "para",
      text: `Hosts are network namespaces: two Computers → router-c → the Server → router-a → two Agents; office i holds computer-i and agent-i. The Computers' uplink is router-c's egress toward the Server, the Agents' downlink router-a's egress toward the Agents: each shaped queue sits on a forwarding hop, shared by both hosts of its side; the other direction is never shaped. Every case starts fresh Server, Computer and Agent processes of the build named (their shipped \`dist\`, plain node): ${builds}. Downloads are the SDK's defaults (getSkillRaw, then downloadBlob to a file), checked here by sha256. Sizing for a link (our build): in the summary at the top.`,
    },
  ];
  if (d.builds.some((b) => b.label === "baseline")) {
    blocks.push(
      { kind: "heading", level: 3, text: "Sizing for a link, baseline build" },
      {
        kind: "para",
        text: "The summary's table for the baseline build (same run, cases interleaved):",
      },
      {
        kind: "table",
        head: [
          "link rate",
          "uplink: utilization",
          "uplink: p95 during",
          "downlink: utilization",
          "downlink: p95 during",
        ],
        rows: sizingRows(d, "baseline"),
      },
    );
  }
  blocks.push(
    ...headedTable(
      "Downloads",
      [
        "case",
        "shaped queue",
        "file",
        "build",
        "download",
        "wire B per payload B",
        "drops",
        "what an honest client must not see",
        "Server's largest queue (max)",
        "load avg",
      ],
      downloadRows(d),
    ),
    ...headedTable(
      "Small requests: p50 / p95 / max in ms",
      [
        "case",
        "build",
        "same pair idle",
        "same pair during: tool_call",
        "same pair during: get_skills",
        "other pair idle",
        "other pair during",
        "sent every",
      ],
      latencyRows(d),
    ),
  );
  if ((d.coding ?? []).length > 0) {
    blocks.push(
      { kind: "heading", level: 3, text: "Compressed carriage: compression on beside off" },
      {
        kind: "para",
        text: "The SDK's default (content_encoding asked; the Computer codes what shrinks) beside `compression: false`, our build, fresh processes per run, the order alternating. MB/s counts resource bytes; wire B/B is everything that left through the shaped queue per resource byte; CPU is ms per MB of resource bytes (Computer / Agent / Server).",
      },
      {
        kind: "table",
        head: [
          "case",
          "shaped queue",
          "file",
          "on/off (pairs)",
          "on: MB/s, wire B/B, codings",
          "off: MB/s, wire B/B",
          "CPU ms/MB on (C/A/S)",
          "CPU ms/MB off (C/A/S)",
          "setbacks",
        ],
        rows: codingRows(d),
      },
    );
  }
  if (d.fairness.length > 0) {
    blocks.push(
      ...headedTable(
        "Fairness: two pulls sharing one bottleneck",
        [
          "case",
          "shaped queue",
          "files",
          "build",
          "shares of the link",
          "Jain index",
          "both running",
        ],
        fairnessRows(d),
      ),
    );
  }
  return blocks;
}
