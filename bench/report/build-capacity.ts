/**
 * Report blocks of the capacity model: what a node carries and the sizing by number of Agents
 * (the report's summary), then its crossing-node costs, assumptions and recommended settings.
 */
import {
  NIC_GBPS,
  NODE_CORES,
  TARGET_UTILISATION,
  type CapacityData,
  type Recommendation,
} from "../sections/capacity.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";
import { f1, f2, ms, pct } from "./format.ts";

const mbps = (n: number): string => (Number.isFinite(n) ? n.toFixed(n >= 100 ? 0 : 1) : "–");

function recommendation(label: string, r: Recommendation | null): string[] {
  if (!r) return [];
  return [
    `${label}: ${formatBytes(r.chunkBytes)} chunks, window ${r.window}: ${f1(r.mbps)} MB/s against the best ${f1(r.bestMbps)} MB/s, chunk p99 ${ms(r.p99Ms)} ms (${r.source}).`,
  ];
}

/** The source, what one core and one node carry, and the sizing by number of Agents. */
export function capacitySizingBlocks(d: CapacityData): Block[] {
  const util = `${TARGET_UTILISATION * 100}%`;
  const costs = [d.serverCost.base64, d.serverCost.binary].flatMap((c) => (c ? [c] : []));
  const big = NODE_CORES[NODE_CORES.length - 1];
  const x = d.crossNode;
  return [
    { kind: "heading", level: 3, text: "What one Server core and one node carry" },
    {
      kind: "para",
      text: `Every Server figure derives from one measurement: ${d.source.text}. MB/s per core is 1000 / the Server CPU ms per MB; a node carries the lesser of its cores × ${util} × that rate and what its ${NIC_GBPS} Gbit/s network carries of the carriage. Assumptions, crossing nodes and recommended settings: section "Capacity model" below.`,
    },
    {
      kind: "table",
      head: [
        "carriage",
        "Server CPU per MB",
        "each round (ms/MB)",
        "MB/s per core",
        "one Agent, SDK defaults (MB/s)",
        ...NODE_CORES.map((c) => `${c}-core node at ${util} CPU (MB/s)`),
        `${NIC_GBPS} Gbit/s network (MB/s)`,
        `${big}-core node carries`,
      ],
      rows: costs.map((c) => {
        const nodes = d.nodeCapacity.filter((n) => n.carriage === c.carriage);
        const bigNode = nodes.find((n) => n.cores === big);
        return [
          c.carriage,
          `${f2(c.msPerMb)} ms`,
          c.rounds.reps.map((v) => v.toFixed(2)).join(", "),
          mbps(c.perCoreMbps),
          f1(c.demandMbps),
          ...NODE_CORES.map((cores) => mbps(nodes.find((n) => n.cores === cores)?.cpuMbps ?? NaN)),
          mbps(bigNode?.networkMbps ?? NaN),
          bigNode ? `${mbps(bigNode.mbps)} MB/s (${bigNode.limit} bound)` : "–",
        ];
      }),
    },
    {
      kind: "heading",
      level: 3,
      text: `Sizing for a number of Agents (base64, the spec's carriage)`,
    },
    {
      kind: "table",
      head: [
        "Agents",
        "MB/s per Agent",
        "total MB/s",
        "busy Server cores",
        `Server processes at ${util}`,
        ...NODE_CORES.map((c) => `${c}-core nodes`),
        `network per ${big}-core node (Gbit/s each way)`,
        ...(x
          ? ["Server processes if every chunk crosses", "Redis cores if every chunk crosses"]
          : []),
      ],
      rows: d.rows.map((r) => [
        String(r.agents),
        f1(r.demandMbps),
        mbps(r.totalMbps),
        f1(r.serverCores),
        String(r.processes),
        ...NODE_CORES.map((c) => String(r.nodes[String(c)] ?? "–")),
        f1(r.gbpsPerNode),
        ...(x
          ? [
              String(r.processesCross ?? "–"),
              r.redisCores === null
                ? "–"
                : r.redisCores > TARGET_UTILISATION
                  ? `${f2(r.redisCores)} (beyond one Redis at ${util}: shard, or keep offices on one node)`
                  : f2(r.redisCores),
            ]
          : []),
      ]),
    },
  ];
}

/** The rest of the model: crossing nodes over Redis, assumptions, recommended settings. */
export function capacityBlocks(d: CapacityData): Block[] {
  const util = `${TARGET_UTILISATION * 100}%`;
  const blocks: Block[] = [
    {
      kind: "para",
      text: `What one Server core and one node carry, and the sizing by number of Agents, are in the summary at the top; their one source: ${d.source.text}.`,
    },
  ];
  const x = d.crossNode;
  if (x) {
    blocks.push(
      { kind: "heading", level: 3, text: "Crossing nodes over Redis" },
      {
        kind: "table",
        head: [
          "Server CPU per MB crossing (nodes A + B)",
          "× one in-memory Server",
          "MB/s per Server core crossing",
          "redis-server CPU per MB",
          `crossing MB/s one Redis core carries at ${util}`,
          "one pull crossing / on one node",
        ],
        rows: [
          [
            `${f2(x.msPerMb)} ms`,
            `${f2(x.serverCpuFactor)}×`,
            mbps(x.perCoreCrossMbps),
            x.redisCpuMsPerMb === null ? "–" : `${f2(x.redisCpuMsPerMb)} ms`,
            x.redisCoreMbps === null ? "–" : mbps(x.redisCoreMbps),
            pct(x.throughputCrossVsOne),
          ],
        ],
      },
    );
  }
  blocks.push(
    { kind: "heading", level: 3, text: "Assumptions and limits" },
    { kind: "list", items: d.assumptions },
    { kind: "heading", level: 3, text: "Recommended settings" },
    {
      kind: "list",
      items: [
        ...recommendation("Default (base64)", d.recommended),
        ...recommendation("With binary carriage", d.recommendedBinary),
        ...(d.recommended ? [] : ["No sweep in this run: no recommendation."]),
        ...(d.rssPerOfficeBytes !== null
          ? [
              `Server memory per connected office (Agent + Computer): about ${(d.rssPerOfficeBytes / 1024).toFixed(0)} KiB (Server RSS / offices in section many Agents; an upper bound, it includes the process's base).`,
            ]
          : []),
      ],
    },
  );
  return blocks;
}
