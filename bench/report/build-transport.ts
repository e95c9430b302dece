/** Report blocks of section transport: the stock transport row and each fast path's gain, per role. */
import { caseLabel, type TransportData, type TransportPoint } from "../sections/transport.ts";
import { BATCHED_ATTACHMENT_MOST as COMPUTER_BATCHED_MOST } from "../../computer/transport/index.ts";
import { BATCHED_ATTACHMENT_MOST as SERVER_BATCHED_MOST } from "../../server/transport/session-writes.ts";
import type { TransportCase } from "../lib/plan.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";

/** One departure from the libraries' stock behaviour: whose it is, and what it is for. */
export interface Departure {
  role: "Server" | "Computer" | "Agent";
  name: string;
  /** The configuration of section transport that runs the default without it. */
  config: string;
  /** What it serves, and the configuration it was made for. */
  goal: string;
  /**
   * Whether it acts on the chunks of this case (its transport's own rule); elsewhere it is stock,
   * or touches only the few bytes of the other side's acks.
   */
  actsOn: (c: TransportCase) => boolean;
}

const binaryUpTo =
  (most: number) =>
  (c: TransportCase): boolean =>
    c.carriage === "binary" && c.chunkBytes <= most;
/** A Computer's fast paths act on what it sends: a pull's chunks, never an upload's small acks. */
const pulls =
  (rule: (c: TransportCase) => boolean) =>
  (c: TransportCase): boolean =>
    c.direction === "get" && rule(c);

/** Every fast path on by default, of every role. */
export const DEPARTURES: readonly Departure[] = [
  {
    role: "Server",
    name: "raw_acks",
    config: "without raw_acks",
    goal: "D13 (the Computer's ack relayed byte for byte); Server CPU per MB of base64 pulls",
    // An upload's acks are text too, but carry no chunk: they cross it, a few bytes each.
    actsOn: (c) => c.direction === "get" && c.carriage === "base64",
  },
  {
    role: "Server",
    name: "raw_uploads",
    config: "without raw_uploads",
    goal: "D13 (an Agent's put_blob chunk relayed byte for byte); Server CPU per MB of base64 upload",
    actsOn: (c) => c.direction === "put" && c.carriage === "base64",
  },
  {
    role: "Server",
    name: "batch_writes",
    config: "without batch_writes",
    goal: `the small-chunk goals: one write per binary answer (binary at 16 KiB; acts up to ${formatBytes(SERVER_BATCHED_MOST)})`,
    actsOn: binaryUpTo(SERVER_BATCHED_MOST),
  },
  {
    role: "Computer",
    name: "batch_writes",
    config: "without computer batch_writes",
    goal: `the small-chunk goals: one write per binary answer (binary at 16 KiB; acts up to ${formatBytes(COMPUTER_BATCHED_MOST)})`,
    actsOn: pulls(binaryUpTo(COMPUTER_BATCHED_MOST)),
  },
  {
    role: "Agent",
    name: "upload_text",
    config: "without agent upload_text",
    goal: "an SDK base64 upload chunk written around its base64, not through JSON.stringify; Agent CPU per MB of a base64 upload",
    // It writes only the SDK's own base64 put_blob chunks: an upload's, never a pull's requests.
    actsOn: (c) => c.direction === "put" && c.carriage === "base64",
  },
];

const x2 = (v: number): string => `×${v.toFixed(2)}`;

/**
 * The gain of `dep` at a point: its role's CPU per MB without it / with it, the Agent's CPU per
 * MB likewise, and MB/s with it / without it (above 1: the fast path pays), or null when it was
 * not measured there.
 */
export function gainOf(
  d: TransportData,
  dep: Departure,
  at: TransportCase,
): { cpu: number; agent: number; mbps: number } | null {
  const p = d.points.find(
    (q) =>
      q.config === dep.config &&
      q.direction === at.direction &&
      q.carriage === at.carriage &&
      q.chunkBytes === at.chunkBytes,
  );
  if (!p) return null;
  const cpu = {
    Server: p.serverCpuVsDefault,
    Computer: p.computerCpuVsDefault,
    Agent: p.agentCpuVsDefault,
  }[dep.role];
  return { cpu, agent: p.agentCpuVsDefault, mbps: 1 / p.mbpsVsDefault };
}

export function transportBlocks(d: TransportData): Block[] {
  const row = (p: TransportPoint): string[] => [
    p.config,
    caseLabel(p),
    p.medianMbps.toFixed(1),
    x2(p.mbpsVsDefault),
    p.serverCpuMsPerMb.toFixed(2),
    x2(p.serverCpuVsDefault),
    p.computerCpuMsPerMb.toFixed(2),
    x2(p.computerCpuVsDefault),
    p.agentCpuMsPerMb.toFixed(2),
    x2(p.agentCpuVsDefault),
    `${p.probeP50Ms.toFixed(1)} / ${p.probeP99Ms.toFixed(1)}`,
  ];
  const cases = d.points.filter((p) => p.config === "default");
  const measured = DEPARTURES.filter((dep) => d.points.some((p) => p.config === dep.config));
  return [
    {
      kind: "para",
      text: `The whole stack on the stock transport (Server and Computer with \`--stock-transport\`, the Agent's clients with \`transport: "stock"\`: socket.io, engine.io, ws and socket.io-client as shipped) beside the default, and the default without each fast path of the Server (\`without <name>\`), of the Computer (\`without computer <name>\`) and of the Agent (\`without agent <name>\`), in the same run (${formatBytes(d.fileBytes)} per pull or upload). Ratios are to the default measured in the same round: a CPU ratio above 1 is what the default saves. Every configuration has its own Server process (one Computer process and one Agent process hold them all): the ratios of \`default again\`, the default once more through a Server of its own, are what two identical stacks differ by in this run, the spread a fast path's gain must stand above. A fast path that does not act at a case (its transport's own rule: raw_acks on text acks, which carry a pull's chunks but only an upload's short answers; raw_uploads on text \`client:put_blob\` events; batch_writes on binary parts up to ${formatBytes(SERVER_BATCHED_MOST)}; the Computer's on what it sends, a pull's chunks; the Agent's upload_text on its own base64 upload chunks) runs stock code there, or only on those short answers: its ratio is the same kind of difference. Probe: another Agent's ${formatBytes(d.probeChunkBytes)} window-1 chunks through the same Server during the pull or upload (p50 / p99 ms). Agent CPU is the Agent process's, which holds that probe Agent too: its pulls are in every configuration's Agent figure.`,
    },
    {
      kind: "table",
      head: [
        "transport",
        "direction, carriage, chunk",
        "MB/s",
        "vs default",
        "Server ms/MB",
        "vs default",
        "Computer ms/MB",
        "vs default",
        "Agent ms/MB",
        "vs default",
        "probe p50 / p99 ms",
      ],
      rows: d.points.map(row),
    },
    {
      kind: "table",
      head: [
        "fast path",
        "the goal it serves",
        ...cases.map((c) => `${caseLabel(c)}: what it saves, gains`),
      ],
      rows: measured.map((dep) => [
        `${dep.role} ${dep.name}`,
        dep.goal,
        ...cases.map((c) => {
          const g = gainOf(d, dep, c);
          if (g === null) return "–";
          const words = `${dep.role} CPU/MB ${x2(g.cpu)}, MB/s ${x2(g.mbps)}`;
          return dep.actsOn(c) ? words : `does not act (stock here): ${words}`;
        }),
      ]),
    },
  ];
}
