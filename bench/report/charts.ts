/**
 * The report's charts as Vega-Lite specifications (rendered by vega.ts). One unit per axis; where
 * a point was measured several times, its median is drawn with the min–max of the repetitions;
 * every chart with two or more series has a legend naming them.
 */
import type { DirectData } from "../sections/direct.ts";
import type { ManyAgentsData } from "../sections/many-agents.ts";
import type { MicroData } from "../sections/micro.ts";
import type { SweepPoint } from "../sections/sweep.ts";
import type { TwoNodeData } from "../sections/two-node.ts";
import type { UserViewData } from "../sections/user-view.ts";
import type { RepeatedPoint } from "../lib/measure.ts";
import { formatBytes, type Spread } from "../lib/stats.ts";
import { bytesX, spreadRule, type ChartSpec } from "./vega.ts";

type Carriage = "base64" | "binary";

/** A chart and how many series its legend must name (1: no legend needed). */
export interface Chart {
  spec: ChartSpec;
  series: number;
}

const STACK = "our stack";
const BARE = "bare socket.io relay (same point, measured next to it)";

const range = (s: Spread): { median: number; min: number; max: number } => ({
  median: s.median,
  min: s.min,
  max: s.max,
});

/**
 * Stack against the bare relay at every chunk size, one panel per window; the bare relay is the
 * repetition measured right before or after each stack repetition, not the ceiling section's.
 */
export function sweepChart(points: readonly SweepPoint[], carriage: Carriage): Chart {
  const pts = points.filter((p) => p.carriage === carriage);
  const values = pts.flatMap((p) => [
    { window: p.window, side: STACK, chunk: p.chunkBytes, ...range(p.spread) },
    { window: p.window, side: BARE, chunk: p.chunkBytes, ...range(p.bare) },
  ]);
  const x = bytesX(
    pts.map((p) => p.chunkBytes),
    "chunk",
    "chunk size",
    4,
  );
  const color = {
    field: "side",
    type: "nominal",
    title: null,
    scale: { domain: [STACK, BARE], range: ["#1f77b4", "#ff7f0e"] },
  };
  return {
    series: 2,
    spec: {
      title: {
        text: `Chunk sweep, ${carriage}: our stack and the bare relay, MB/s by chunk size (1 MB buffer)`,
        subtitle: "line: median of the repetitions; vertical bar: their min–max",
      },
      data: { values },
      facet: {
        column: {
          field: "window",
          type: "ordinal",
          title: null,
          header: { labelExpr: "'window ' + datum.value" },
        },
      },
      spec: {
        width: 180,
        height: 220,
        layer: [
          spreadRule(x, color),
          {
            mark: { type: "line", point: true, strokeWidth: 2 },
            encoding: {
              x,
              y: { field: "median", type: "quantitative", title: "MB/s" },
              color,
              strokeDash: {
                field: "side",
                type: "nominal",
                title: null,
                scale: {
                  domain: [STACK, BARE],
                  range: [
                    [1, 0],
                    [5, 3],
                  ],
                },
              },
            },
          },
        ],
      },
    },
  };
}

/** Stack / bare relay of each back-to-back pair, median and range, per window, with the goal. */
export function ratioChart(points: readonly SweepPoint[], carriage: Carriage): Chart {
  const pts = points.filter((p) => p.carriage === carriage && p.pairRatios.reps.length > 0);
  const windows = [...new Set(pts.map((p) => p.window))].sort((a, b) => a - b);
  const values = pts.map((p) => ({
    window: `window ${p.window}`,
    chunk: p.chunkBytes,
    ...range(p.pairRatios),
  }));
  const x = bytesX(
    pts.map((p) => p.chunkBytes),
    "chunk",
    "chunk size",
  );
  const color = {
    field: "window",
    type: "nominal",
    title: null,
    sort: windows.map((w) => `window ${w}`),
  };
  return {
    series: windows.length,
    spec: {
      title: {
        text: `Our stack / bare relay, ${carriage}, each pair measured back to back (goal ≥ 85%)`,
        subtitle: "line: median of the pairs; vertical bar: their min–max",
      },
      width: 640,
      height: 260,
      layer: [
        {
          data: { values },
          layer: [
            spreadRule(x, color),
            {
              mark: { type: "line", point: true },
              encoding: {
                x,
                y: {
                  field: "median",
                  type: "quantitative",
                  title: "stack / bare relay",
                  axis: { format: ".0%" },
                },
                color,
              },
            },
          ],
        },
        {
          data: { values: [{ goal: 0.85 }] },
          layer: [
            {
              mark: { type: "rule", strokeDash: [4, 3], color: "#555" },
              encoding: { y: { field: "goal", type: "quantitative" } },
            },
            {
              mark: { type: "text", align: "left", dx: 4, dy: -6, color: "#555", x: 0 },
              encoding: {
                y: { field: "goal", type: "quantitative" },
                text: { value: "goal 85%" },
              },
            },
          ],
        },
      ],
    },
  };
}

/** HTTP Range requests against our stack's two carriages at one window. */
export function directChart(
  direct: DirectData,
  stack: readonly SweepPoint[],
  window: number,
): Chart {
  const rows = (name: string, pts: readonly RepeatedPoint[]) =>
    pts
      .filter((p) => p.window === window)
      .map((p) => ({ series: name, chunk: p.chunkBytes, ...range(p.spread) }));
  const values = [
    ...rows("HTTP Range requests (no relay)", direct.points),
    ...rows(
      "our stack, base64",
      stack.filter((p) => p.carriage === "base64"),
    ),
    ...rows(
      "our stack, binary",
      stack.filter((p) => p.carriage === "binary"),
    ),
  ];
  const x = bytesX(
    values.map((v) => v.chunk),
    "chunk",
    "chunk size",
  );
  const color = { field: "series", type: "nominal", title: null };
  return {
    series: new Set(values.map((v) => v.series)).size,
    spec: {
      title: {
        text: `Direct HTTP Range on loopback against our stack, window ${window}: MB/s by chunk size`,
        subtitle: "line: median of the repetitions; vertical bar: their min–max",
      },
      width: 640,
      height: 260,
      data: { values },
      layer: [
        spreadRule(x, color),
        {
          mark: { type: "line", point: true },
          encoding: { x, y: { field: "median", type: "quantitative", title: "MB/s" }, color },
        },
      ],
    },
  };
}

/** sha256 and base64, inline and in the pool, MB/s by size (mean, with the 95% margin). */
export function microChart(d: MicroData): Chart {
  const groups: Array<[string, string]> = [
    ["sha256 inline", "sha256 inline"],
    ["sha256 pool (clone)", "sha256 pool (clone)"],
    ["sha256 pool (SharedArrayBuffer)", "sha256 pool (SAB)"],
    ["base64 inline", "base64 inline"],
    ["base64 pool", "base64 pool"],
    ["base64 decode inline", "base64 decode inline"],
  ];
  const values = d.rows.flatMap((r) => {
    if (r.bytes === null || r.mbps === null) return [];
    const size = formatBytes(r.bytes);
    const g = groups.find(([prefix]) => r.name === `${prefix} ${size}`);
    if (!g) return [];
    const mb = r.bytes / 1e6;
    return [
      {
        series: g[1],
        bytes: r.bytes,
        median: r.mbps,
        min: mb / ((r.meanMs + r.moeMs) / 1000),
        max: r.meanMs > r.moeMs ? mb / ((r.meanMs - r.moeMs) / 1000) : r.mbps,
      },
    ];
  });
  const x = bytesX(
    values.map((v) => v.bytes),
    "bytes",
    "bytes per operation",
  );
  const color = { field: "series", type: "nominal", title: null };
  const y = {
    field: "median",
    type: "quantitative",
    title: "MB/s (log scale)",
    scale: { type: "log" },
  };
  return {
    series: new Set(values.map((v) => v.series)).size,
    spec: {
      title: {
        text: "sha256 and base64: inline against the piscina pool (one task in flight)",
        subtitle: "point: mean; vertical bar: the mean's 95% margin",
      },
      width: 640,
      height: 280,
      data: { values },
      layer: [
        spreadRule(x, color, { y: { field: "min", type: "quantitative", scale: { type: "log" } } }),
        { mark: { type: "line", point: true }, encoding: { x, y, color } },
      ],
    },
  };
}

/** Aggregate MB/s and Server CPU by number of Agents: two panels, one unit each. */
export function manyAgentsChart(d: ManyAgentsData): Chart {
  const values = d.rows.map((r) => ({
    agents: r.agents,
    mbps: r.aggregate.median,
    mbpsMin: r.aggregate.min,
    mbpsMax: r.aggregate.max,
    cpu: r.serverCpu.median,
    cpuMin: r.serverCpu.min,
    cpuMax: r.serverCpu.max,
  }));
  const x = {
    field: "agents",
    type: "ordinal",
    title: "Agents pulling at once",
    axis: { labelAngle: 0 },
  };
  const panel = (field: string, title: string, fill: string): ChartSpec => ({
    width: 300,
    height: 200,
    layer: [
      {
        mark: { type: "bar", color: fill, opacity: 0.85 },
        encoding: { x, y: { field, type: "quantitative", title } },
      },
      {
        mark: { type: "rule", strokeWidth: 1.5 },
        encoding: {
          x,
          y: { field: `${field}Min`, type: "quantitative" },
          y2: { field: `${field}Max` },
        },
      },
    ],
  });
  return {
    series: 1,
    spec: {
      title: {
        text: "Many Agents, each pulling its own resource with the SDK defaults (base64 spec mode)",
        subtitle: "bar: median over the rounds; black bar: their min–max",
      },
      data: { values },
      hconcat: [
        panel("mbps", "aggregate MB/s", "#1f77b4"),
        panel("cpu", "Server CPU, % of one core", "#2ca02c"),
      ],
    },
  };
}

const SHORT_PLACEMENT: Record<string, string> = {
  memory: "in-memory Server",
  redisOne: "Redis cluster, both on A",
  cross: "Redis, Agent A / Computer B",
};

/** One node against two over Redis: median MB/s and Server CPU per MB, per case. */
export function twoNodeChart(d: TwoNodeData): Chart {
  const caseName = (p: TwoNodeData["points"][number]): string =>
    `${p.carriage}${p.agents > 1 ? `, ${p.agents} Agents` : ", 1 Agent"}`;
  const values = d.points.map((p) => {
    const rounds: Spread = {
      reps: p.perRoundMbps,
      median: p.medianMbps,
      min: Math.min(...p.perRoundMbps),
      max: Math.max(...p.perRoundMbps),
    };
    return {
      placement: SHORT_PLACEMENT[p.placement] ?? p.placement,
      case: caseName(p),
      mbps: rounds.median,
      mbpsMin: rounds.min,
      mbpsMax: rounds.max,
      ms: p.serverCpuMsPerMbRounds.median,
      msMin: p.serverCpuMsPerMbRounds.min,
      msMax: p.serverCpuMsPerMbRounds.max,
    };
  });
  const cases = [...new Set(values.map((v) => v.case))];
  const y = {
    field: "placement",
    type: "nominal",
    title: null,
    sort: Object.values(SHORT_PLACEMENT),
  };
  const yOffset = { field: "case", sort: cases };
  const color = { field: "case", type: "nominal", title: null, sort: cases };
  const panel = (field: string, title: string): ChartSpec => ({
    width: 260,
    height: 60 + 24 * cases.length,
    layer: [
      {
        mark: "bar",
        encoding: { y, yOffset, x: { field, type: "quantitative", title }, color },
      },
      {
        mark: { type: "rule", color: "black" },
        encoding: {
          y,
          yOffset,
          x: { field: `${field}Min`, type: "quantitative" },
          x2: { field: `${field}Max` },
        },
      },
    ],
  });
  return {
    series: cases.length,
    spec: {
      title: {
        text: "One Server node against two over Redis (SDK defaults, whole reads)",
        subtitle: "bar: median of the rounds; black line: their min–max",
      },
      data: { values },
      hconcat: [panel("mbps", "median MB/s"), panel("ms", "Server CPU ms per MB (all nodes)")],
    },
  };
}

/** Short names of the user-view cases, in the order the chart lists them. */
export const USER_VIEW_LABELS: Record<UserViewData["rows"][number]["id"], string> = {
  "cli-binary": "CLI → file, defaults (process start included)",
  "sdk-binary": "SDK → memory, defaults",
  "cli-base64": "CLI → file, --base64 (process start included)",
  "sdk-base64": "SDK → memory, binary: false",
  "bare-binary": "bare socket.io relay → memory, binary",
  "bare-base64": "bare socket.io relay → memory, base64",
  http: "HTTP Range → memory",
};

/** The user view: MB/s of each way to get the file, coloured by the carriage it used. */
export function userViewChart(d: UserViewData): Chart {
  const values = d.rows.map((r) => ({
    case: USER_VIEW_LABELS[r.id],
    carriage: r.carriage === "http" ? "plain bytes (HTTP)" : `${r.carriage} carriage`,
    median: r.mbps.median,
    min: r.mbps.min,
    max: r.mbps.max,
  }));
  const carriages = [...new Set(values.map((v) => v.carriage))];
  const y = {
    field: "case",
    type: "nominal",
    title: null,
    sort: d.rows.map((r) => USER_VIEW_LABELS[r.id]),
  };
  const color = { field: "carriage", type: "nominal", title: null, sort: carriages };
  return {
    series: carriages.length,
    spec: {
      title: {
        text: `User view: one ${formatBytes(d.fileBytes)} file, MB/s of each way to get it`,
        subtitle: `bar: median of ${d.rounds} interleaved rounds; black line: their min–max`,
      },
      width: 480,
      height: 28 * values.length,
      data: { values },
      layer: [
        {
          mark: "bar",
          encoding: { y, x: { field: "median", type: "quantitative", title: "MB/s" }, color },
        },
        {
          mark: { type: "rule", color: "black" },
          encoding: {
            y,
            x: { field: "min", type: "quantitative" },
            x2: { field: "max" },
          },
        },
      ],
    },
  };
}
