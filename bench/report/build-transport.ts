/** Report blocks of section transport: the stock transport row and each kept fast path's gain. */
import type { TransportData, TransportPoint } from "../sections/transport.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";

/** What each Server fast path kept on by default is for. */
export const FAST_PATH_GOALS: Record<string, string> = {
  raw_acks: "D13 (the Computer's ack relayed byte for byte); Server CPU per MB of base64",
  batch_writes: "the small-chunk goals: one write per binary answer (binary at 16 KiB)",
};

const x2 = (v: number): string => `×${v.toFixed(2)}`;

/**
 * The gain of `name` at a point: Server CPU per MB without it / with it, and MB/s with it /
 * without it (above 1: the fast path pays), or null when it was not measured there.
 */
export function gainOf(
  d: TransportData,
  name: string,
  at: TransportPoint,
): { serverCpu: number; mbps: number } | null {
  const p = d.points.find(
    (q) =>
      q.config === `without ${name}` &&
      q.carriage === at.carriage &&
      q.chunkBytes === at.chunkBytes,
  );
  return p ? { serverCpu: p.serverCpuVsDefault, mbps: 1 / p.mbpsVsDefault } : null;
}

export function transportBlocks(d: TransportData): Block[] {
  const row = (p: TransportPoint): string[] => [
    p.config,
    `${p.carriage} ${formatBytes(p.chunkBytes)}`,
    p.medianMbps.toFixed(1),
    x2(p.mbpsVsDefault),
    p.serverCpuMsPerMb.toFixed(2),
    x2(p.serverCpuVsDefault),
    p.computerCpuMsPerMb.toFixed(2),
    x2(p.computerCpuVsDefault),
    `${p.probeP50Ms.toFixed(1)} / ${p.probeP99Ms.toFixed(1)}`,
  ];
  const cases = d.points.filter((p) => p.config === "default");
  const names = Object.keys(FAST_PATH_GOALS).filter((n) =>
    d.points.some((p) => p.config === `without ${n}`),
  );
  return [
    {
      kind: "para",
      text: `The whole stack with both roles on the stock transport (\`--stock-transport\`: socket.io, engine.io and ws as shipped) beside the default, and the default Server without each of its fast paths, in the same run (${formatBytes(d.fileBytes)} per read). Ratios are to the default measured in the same round: a Server CPU ratio above 1 is what the default saves. Probe: another Agent's ${formatBytes(d.probeChunkBytes)} window-1 chunks through the same Server during the pull (p50 / p99 ms).`,
    },
    {
      kind: "table",
      head: [
        "transport",
        "carriage, chunk",
        "MB/s",
        "vs default",
        "Server ms/MB",
        "vs default",
        "Computer ms/MB",
        "vs default",
        "probe p50 / p99 ms",
      ],
      rows: d.points.map(row),
    },
    {
      kind: "table",
      head: [
        "Server fast path",
        "the goal it serves",
        ...cases.map((c) => `${c.carriage} ${formatBytes(c.chunkBytes)}: what it saves, gains`),
      ],
      rows: names.map((n) => [
        n,
        FAST_PATH_GOALS[n]!,
        ...cases.map((c) => {
          const g = gainOf(d, n, c);
          return g === null ? "–" : `Server CPU/MB ${x2(g.serverCpu)}, MB/s ${x2(g.mbps)}`;
        }),
      ]),
    },
  ];
}
