/**
 * Charts are Vega-Lite specifications rendered to SVG in Node by Vega's own SVG renderer: no
 * browser, no canvas (without the optional `canvas` package Vega estimates text widths, generously,
 * so its layout leaves labels room; the headless-browser test checks the real boxes). This file
 * holds the rendering and the conventions every chart shares: fonts, the byte axis, spread marks.
 */
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

/**
 * A Vega-Lite specification as plain JSON. Vega-Lite's own compiler checks it when it renders:
 * any warning it or Vega logs (an unknown channel, a field with no data, a non-finite extent)
 * fails the rendering instead of drawing a wrong chart silently.
 */
export type ChartSpec = Record<string, unknown>;

/** A logger for Vega-Lite's compiler and Vega's view that keeps every warning and error. */
function strictLogger(problems: string[]) {
  let level = 2;
  const logger = {
    level(l?: number) {
      if (l === undefined) return level;
      level = l;
      return logger;
    },
    error(...args: unknown[]) {
      problems.push(`error: ${args.map(String).join(" ")}`);
      return logger;
    },
    warn(...args: unknown[]) {
      problems.push(`warning: ${args.map(String).join(" ")}`);
      return logger;
    },
    info() {
      return logger;
    },
    debug() {
      return logger;
    },
  };
  return logger;
}

/** Settings every chart shares (fonts and sizes readable at 100% zoom, light grid). */
export const CHART_CONFIG = {
  font: "Liberation Sans, DejaVu Sans, Arial, sans-serif",
  background: "white",
  padding: 8,
  view: { stroke: "#ccc" },
  axis: {
    labelFontSize: 11,
    titleFontSize: 12,
    titleFontWeight: "normal",
    gridColor: "#eee",
    labelLimit: 400,
  },
  // Vega truncates legend labels at 160 px of its estimated width (0.8 em per character): far
  // more than a real font needs, so without a higher limit series names end in "…".
  legend: {
    labelFontSize: 11,
    titleFontSize: 12,
    titleFontWeight: "normal",
    orient: "bottom",
    columns: 3,
    labelLimit: 600,
  },
  header: { labelFontSize: 12, titleFontSize: 12 },
  title: { fontSize: 14, anchor: "start", offset: 10 },
} as const;

/** Renders `spec` to a standalone SVG document; ids are prefixed with `idPrefix` (see scopeIds). */
export async function renderSvg(spec: ChartSpec, idPrefix: string): Promise<string> {
  const problems: string[] = [];
  const logger = strictLogger(problems);
  const full = { ...spec, config: { ...CHART_CONFIG, ...(spec.config as object | undefined) } };
  const compiled = compile(full as unknown as TopLevelSpec, { logger }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logger });
  try {
    const svg = await view.toSVG();
    if (problems.length > 0) {
      throw new Error(`chart ${idPrefix}: Vega reported ${problems.join("; ")}`);
    }
    return scopeIds(svg, idPrefix);
  } finally {
    view.finalize();
  }
}

/**
 * Vega numbers its clip paths and gradients per document ("clip1", …): two charts inlined in one
 * HTML page would point at each other's. Every id and reference gets the chart's own prefix.
 */
export function scopeIds(svg: string, prefix: string): string {
  return svg
    .replace(/\bid="([^"]+)"/g, (_, id: string) => `id="${prefix}-${id}"`)
    .replace(/url\(#([^)]+)\)/g, (_, id: string) => `url(#${prefix}-${id})`)
    .replace(/href="#([^"]+)"/g, (_, id: string) => `href="#${prefix}-${id}"`);
}

/** Axis labels of byte values (powers of two): "16 KiB", "1 MiB". */
const BYTE_LABEL_EXPR =
  "datum.value >= 1048576 ? format(datum.value / 1048576, '~r') + ' MiB' : datum.value >= 1024 ? format(datum.value / 1024, '~r') + ' KiB' : datum.value + ' B'";

/**
 * A log2 chunk-size axis over the powers of two around `values`: a tick on each power, or on
 * every other one when `maxTicks` would be exceeded (narrow panels), so labels never crowd.
 */
export function bytesX(
  values: readonly number[],
  field: string,
  title: string,
  maxTicks = 8,
): ChartSpec {
  const finite = values.filter((v) => Number.isFinite(v) && v > 0);
  const lo = finite.length ? Math.floor(Math.log2(Math.min(...finite))) : 14;
  const hi = Math.max(lo + 1, finite.length ? Math.ceil(Math.log2(Math.max(...finite))) : 20);
  const step = Math.ceil((hi - lo + 1) / maxTicks);
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e += step) ticks.push(2 ** e);
  return {
    field,
    type: "quantitative",
    title,
    // A few pixels of padding keep the end points off the frame.
    scale: { type: "log", base: 2, domain: [2 ** lo, 2 ** hi], nice: false, padding: 10 },
    axis: { values: ticks, labelExpr: BYTE_LABEL_EXPR, labelOverlap: false },
  };
}

/** Min–max rules (the spread of a point's repetitions) on fields `min` and `max`. */
export function spreadRule(
  x: ChartSpec,
  color: ChartSpec | null,
  extra: ChartSpec = {},
): ChartSpec {
  return {
    mark: { type: "rule", strokeWidth: 1.5, opacity: 0.7 },
    encoding: {
      x,
      y: { field: "min", type: "quantitative" },
      y2: { field: "max" },
      ...(color ? { color } : {}),
      ...extra,
    },
  };
}
