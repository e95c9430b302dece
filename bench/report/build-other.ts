/** Report blocks of sections 5–7, the Computer-cost, two-node and user-view sections. */
import type { SectionId } from "../lib/context.ts";
import type { ManyAgentsData } from "../sections/many-agents.ts";
import type { RewritesData } from "../sections/rewrites.ts";
import type { ComputerCostData } from "../sections/computer-cost.ts";
import type { HttpData } from "../sections/http-surface.ts";
import type { CapacityData } from "../sections/capacity.ts";
import { capacityBlocks } from "./build-capacity.ts";
import type { TransportData } from "../sections/transport.ts";
import { transportBlocks } from "./build-transport.ts";
import { USER_VIEW_LABELS, manyAgentsChart, twoNodeChart, userViewChart } from "./charts.ts";
import type { UserViewData } from "../sections/user-view.ts";
import type { UploadData } from "../sections/upload.ts";
import { uploadBlocks } from "./build-upload.ts";
import { PLACEMENTS, type TwoNodeData } from "../sections/two-node.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";
import { f1, f2, mib, ms, pct } from "./format.ts";
import type { Report } from "./types.ts";

function manyBlocks(d: ManyAgentsData): Block[] {
  return [
    {
      kind: "table",
      head: [
        "Agents",
        "aggregate MB/s",
        "each round MB/s",
        "per Agent MB/s (min–max)",
        "verified reads",
        "chunk p50 ms",
        "chunk p99 ms",
        "Server CPU",
        "Server CPU per MB",
        "Server RSS",
      ],
      rows: d.rows.map((r) => [
        String(r.agents),
        f1(r.aggregateMbps),
        r.aggregate.reps.map((x) => x.toFixed(0)).join(", "),
        `${f1(r.perAgentMbps.min)}–${f1(r.perAgentMbps.max)}`,
        String(r.reads),
        ms(r.p50Ms),
        ms(r.p99Ms),
        `${r.serverCpuPercent.toFixed(0)}%`,
        `${f2(r.serverCpuMsPerMb.median)} ms`,
        mib(r.serverRssBytes),
      ]),
    },
    {
      kind: "chart",
      file: "many-agents.svg",
      alt: `Many Agents: aggregate MB/s and Server CPU by number of Agents (${formatBytes(d.fileBytes)} resource each, SDK defaults in base64 spec mode)`,
      chart: manyAgentsChart(d),
    },
  ];
}

function rewriteBlocks(d: RewritesData): Block[] {
  return [
    {
      kind: "para",
      text: `Resource ${formatBytes(d.fileBytes)}, ${d.seconds} s per row; the Agent pulls with the SDK defaults (binary carriage), an auditor pulls raw 64 KiB base64 chunks at random offsets (window 2).`,
    },
    {
      kind: "table",
      head: [
        "resource",
        "mode",
        "rewrites/s",
        "versions",
        "deliveries verified",
        "corrupt",
        "mid-write version",
        "gave up",
        "restarts/download",
        "time to verified p50/p99 s",
        "chunks audited",
        "chunks disagreeing",
        "unverifiable",
        "refused chunk requests",
      ],
      rows: d.rows.map((r) => [
        r.resource === "skill-md" ? "SKILL.md body" : "raw file",
        r.mode,
        String(r.rate),
        String(r.versions),
        `${r.verified}/${r.deliveries}`,
        String(r.corrupt),
        String(r.unknownVersion),
        Object.entries(r.gaveUp)
          .map(([k, v]) => `${v} ${k}`)
          .join(", ") || "0",
        f2(r.restartsPerDownload),
        `${f2(r.secondsToVerified.p50)} / ${f2(r.secondsToVerified.p99)}`,
        String(r.chunksAudited),
        String(r.chunksDisagreeing),
        String(r.chunksUnverifiable),
        Object.entries(r.auditorErrors)
          .map(([k, v]) => `${v} ${k}`)
          .join(", ") || "0",
      ]),
    },
    ...d.rows
      .filter((r) => r.firstError)
      .map((r): Block => ({
        kind: "para",
        text: `${r.resource === "skill-md" ? "SKILL.md body" : "raw file"} ${r.mode} ${r.rate}/s, first give-up: ${r.firstError ?? ""}`,
      })),
  ];
}

function costBlocks(d: ComputerCostData): Block[] {
  const row = (label: string, c: ComputerCostData["perChunk"]["small"]): string[] => [
    label,
    ms(c.computerMs),
    ms(c.cpuMs),
    ms(c.p50Ms),
    String(c.chunks),
  ];
  return [
    {
      kind: "table",
      head: [
        "resource",
        "Computer time per chunk ms",
        "Computer CPU per chunk ms",
        "Agent latency p50 ms",
        "chunks",
      ],
      rows: [
        row(`raw file ${formatBytes(d.smallBytes)}`, d.perChunk.small),
        row(`raw file ${formatBytes(d.bigBytes)}`, d.perChunk.big),
        ["raw ratio", f2(d.perChunk.ratio), f2(d.perChunk.cpuRatio), "", ""],
        row(`SKILL.md body ${formatBytes(d.skillMd.smallBytes)}`, d.skillMd.small),
        row(`SKILL.md body ${formatBytes(d.skillMd.bigBytes)}`, d.skillMd.big),
        ["SKILL.md ratio", f2(d.skillMd.ratio), f2(d.skillMd.cpuRatio), "", ""],
      ],
    },
    {
      kind: "para",
      text: `Event loop of the Computer process while the ${formatBytes(d.bigBytes)} file was hashed again and another pull of the ${formatBytes(d.smallBytes)} file ran at window 4, measured with perf_hooks.monitorEventLoopDelay at a ${d.eld.resolutionMs} ms resolution. That histogram records the whole interval between two timer ticks, so an idle loop reads about ${d.eld.resolutionMs} ms; the delay reported here is the interval minus the ${d.eld.resolutionMs} ms resolution (the raw interval p99 is shown alongside; reports before 2026-12-03 gave the raw interval). The delay is taken over the hash itself, from the mtime bump to the first verified chunk of the new content (get_skill hashes it through the engine's cache), while the pull runs; the whole-window column adds the rest of the pull, as reports before 2026-12-03 timed it. Each measurement has its own baseline: the same pull just before, with no hashing. The Computer's hash threads ran at nice offset 0 and at the default +${d.eld.hashNice}, alternating (threads: nice value × threads of the Computer process after the hash). Goal figure: the default setting's worse run — delay p99 ${ms(d.eld.p99Ms)} ms, max ${ms(d.eld.maxMs)} ms over ${d.eld.seconds.toFixed(1)} s (raw interval p99 ${ms(d.eld.intervalP99Ms)} ms); the other pull: ${d.eld.otherChunks} chunks, p50 ${ms(d.eld.otherP50Ms)} ms, p99 ${ms(d.eld.otherP99Ms)} ms; engine hashes: ${Object.entries(
        d.eld.hashes,
      )
        .map(([k, v]) => `${v} ${k}`)
        .join(", ")}.`,
    },
    {
      kind: "table",
      head: [
        "hash nice",
        "threads",
        "hash window s",
        "delay p99 ms",
        "delay max ms",
        "interval p99 ms",
        "whole-window delay p99 ms",
        "baseline delay p99 ms",
        "baseline interval p99 ms",
        "get_skill s",
        "other pull p99 ms",
      ],
      rows: d.eld.runs.map((x) => [
        `+${x.hashNice}`,
        Object.entries(x.threadNices)
          .map(([n, c]) => `${n}×${c}`)
          .join(" "),
        x.seconds.toFixed(2),
        ms(x.p99Ms),
        ms(x.maxMs),
        ms(x.intervalP99Ms),
        `${ms(x.wholeP99Ms)} over ${x.wholeSeconds.toFixed(1)} s`,
        ms(x.baselineP99Ms),
        ms(x.baselineIntervalP99Ms),
        x.mintSeconds.toFixed(2),
        ms(x.otherP99Ms),
      ]),
    },
  ];
}

function httpBlocks(d: HttpData): Block[] {
  const s = d.sessions;
  return [
    {
      kind: "table",
      head: ["target", "req/s", "requests", "p50 ms", "p99 ms", "non-2xx", "errors"],
      rows: d.rows.map((r) => [
        r.target,
        r.reqPerSec.toFixed(0),
        String(r.total),
        String(r.p50Ms),
        String(r.p99Ms),
        String(r.non2xx),
        String(r.errors),
      ]),
    },
    {
      kind: "para",
      text: `Half-open Engine.IO sessions right after the handshake run: ${s.afterRun}; all closed by the heartbeat ${s.cleanedAfterSeconds === null ? "NOT within the limit" : `after ${s.cleanedAfterSeconds.toFixed(1)} s`}. Server RSS ${mib(s.rssBeforeBytes)} before, ${mib(s.rssPeakBytes)} at the peak, ${mib(s.rssAfterBytes)} after.`,
    },
  ];
}

function twoNodeBlocks(d: TwoNodeData): Block[] {
  const servers = (p: TwoNodeData["points"][number]): string =>
    p.placement === "memory"
      ? `${(p.cpu.serverMem ?? 0).toFixed(0)}%`
      : `A ${(p.cpu.serverA ?? 0).toFixed(0)}% + B ${(p.cpu.serverB ?? 0).toFixed(0)}%`;
  const blocks: Block[] = [
    {
      kind: "para",
      text: `The same pull in three placements: one in-memory Server (the default mode); one node of a two-node Redis cluster with Agent and Computer both on it; Agent on node A and Computer on node B, so every request and chunk ack crosses Redis (${d.adapter}). Resource ${formatBytes(d.fileBytes)}, SDK whole reads with the default chunk and window of each carriage, every read verified by sha256; ${d.rounds} rounds, placements interleaved with a rotating order; medians. CPU is % of one core over the reads; "ms/MB" is CPU time per MB moved.`,
    },
    {
      kind: "table",
      head: [
        "placement",
        "carriage",
        "Agents",
        "chunk / window",
        "median MB/s",
        "each round MB/s",
        "chunk p50 ms",
        "chunk p99 ms",
        "Server CPU",
        "redis-server CPU",
        "Server ms/MB",
        "Redis ms/MB",
      ],
      rows: d.points.map((p) => [
        PLACEMENTS[p.placement],
        p.carriage,
        String(p.agents),
        `${formatBytes(p.chunkBytes)} / ${p.window}`,
        f1(p.medianMbps),
        p.perRoundMbps.map((x) => x.toFixed(0)).join(", "),
        ms(p.p50Ms),
        ms(p.p99Ms),
        servers(p),
        p.cpu.redis === undefined ? "–" : `${p.cpu.redis.toFixed(0)}%`,
        f2(p.serverCpuMsPerMb),
        p.redisCpuMsPerMb === null ? "–" : f2(p.redisCpuMsPerMb),
      ]),
    },
    {
      kind: "table",
      head: [
        "carriage",
        "Agents",
        "cross / one node (MB/s)",
        "cross / in-memory (MB/s)",
        "one Redis node / in-memory (MB/s)",
        "Server CPU per MB, cross / one node",
      ],
      rows: d.ratios.map((r) => [
        r.carriage,
        String(r.agents),
        f2(r.crossVsOne),
        f2(r.crossVsMemory),
        f2(r.oneVsMemory),
        f2(r.serverCpuCrossVsOne),
      ]),
    },
  ];
  blocks.push({
    kind: "chart",
    file: "two-node.svg",
    alt: `One node against two over Redis: median MB/s and Server CPU per MB by placement (${formatBytes(d.fileBytes)}, SDK defaults)`,
    chart: twoNodeChart(d),
  });
  const base = d.ratios.find((r) => r.carriage === "base64" && r.agents === 1);
  if (base) {
    blocks.push({
      kind: "para",
      text: `Crossing the bus: a base64 pull from a Computer on another node ran at ${pct(base.crossVsOne)} of the same pull with both on one node, and spent ${f2(base.serverCpuCrossVsOne)}× the Server CPU per MB (both nodes together): each chunk ack is encoded once more (msgpack), published through Redis and decoded again on the requesting node. An Agent and its Computers on one node pay only one registry lookup per request (the one-Redis-node / in-memory column).`,
    });
  }
  return blocks;
}

function userViewBlocks(d: UserViewData): Block[] {
  const ratio = (x: { median: number; reps: number[] }): string =>
    `${pct(x.median)} (${x.reps.map(pct).join(", ")})`;
  return [
    {
      kind: "para",
      text: `One ${formatBytes(d.fileBytes)} skill file, ${d.rounds} interleaved rounds (the order rotating), every read verified by sha256. Process start of the built CLI alone (\`a2c-agent --help\`, spawn to exit): median ${d.cliStartSeconds.median.toFixed(2)} s (${d.cliStartSeconds.reps.map((x) => x.toFixed(2)).join(", ")}).`,
    },
    {
      kind: "table",
      head: [
        "way",
        "what is timed",
        "carriage",
        "chunk / window",
        "median MB/s",
        "each round MB/s",
        "median s",
      ],
      rows: d.rows.map((r) => [
        USER_VIEW_LABELS[r.id],
        r.what,
        r.carriage === "http" ? "none (HTTP)" : r.carriage,
        `${formatBytes(r.chunkBytes)} / ${r.window}`,
        f1(r.mbps.median),
        r.mbps.reps.map((x) => x.toFixed(0)).join(", "),
        f2(r.seconds.median),
      ]),
    },
    {
      kind: "table",
      head: ["ratio (median of per-round pairs)", "value"],
      rows: [
        ["CLI → file / bare relay → memory, binary carriage", ratio(d.cliVsBare)],
        ["CLI → file / SDK → memory, binary carriage", ratio(d.cliVsSdk.binary)],
        ["CLI → file / SDK → memory, base64", ratio(d.cliVsSdk.base64)],
        [
          "SDK defaults / SDK binary: false",
          `${f2(d.defaultVsSpec.median)}× (${d.defaultVsSpec.reps.map(f2).join(", ")})`,
        ],
      ],
    },
    {
      kind: "chart",
      file: "user-view.svg",
      alt: `User view: MB/s of the CLI to a file, the SDK into memory, the bare relay and HTTP Range, by carriage (${formatBytes(d.fileBytes)})`,
      chart: userViewChart(d),
    },
  ];
}

export function otherBlocks(id: SectionId, d: unknown, _report: Report): Block[] {
  switch (id) {
    case "manyAgents":
      return manyBlocks(d as ManyAgentsData);
    case "rewrites":
      return rewriteBlocks(d as RewritesData);
    case "computerCost":
      return costBlocks(d as ComputerCostData);
    case "http":
      return httpBlocks(d as HttpData);
    case "capacity":
      return capacityBlocks(d as CapacityData);
    case "twoNode":
      return twoNodeBlocks(d as TwoNodeData);
    case "transport":
      return transportBlocks(d as TransportData);
    case "userView":
      return userViewBlocks(d as UserViewData);
    case "upload":
      return uploadBlocks(d as UploadData);
    default:
      return [];
  }
}
