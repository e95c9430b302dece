/**
 * A small dependency-free SVG chart generator: line charts (optionally log2 x axis, dashed series,
 * horizontal reference lines) and grouped bar charts. Output is a standalone SVG document.
 */

export interface XY {
  x: number;
  y: number;
}

export interface Series {
  name: string;
  points: XY[];
  dashed?: boolean;
  /** Palette index; series sharing it share a colour (e.g. stack and ceiling of one window). */
  color?: number;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  logX?: boolean;
  xFormat?: (x: number) => string;
  yFormat?: (y: number) => string;
  refLines?: Array<{ y: number; label: string }>;
  width?: number;
  height?: number;
}

export interface BarChart {
  title: string;
  yLabel: string;
  /** Category labels along x; each series gives one bar per category. */
  categories: string[];
  series: Array<{ name: string; values: number[] }>;
  yFormat?: (y: number) => string;
  width?: number;
  height?: number;
}

const PALETTE = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
];

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) =>
    c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === "&" ? "&amp;" : c === '"' ? "&quot;" : "&apos;",
  );
}

function color(i: number): string {
  return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length] ?? "#000";
}

/** "Nice" upper bound and tick step for [0, max]. */
export function niceScale(max: number, ticks = 5): { top: number; step: number } {
  if (!Number.isFinite(max) || max <= 0) return { top: 1, step: 0.2 };
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  return { top: Math.ceil(max / step) * step, step };
}

function fmt(n: number): string {
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1).replace(/\.0$/, "");
  return n.toFixed(2).replace(/\.?0+$/, "") || "0";
}

function frame(width: number, height: number, title: string, body: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">` +
    `<rect width="${width}" height="${height}" fill="#fff"/>` +
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(title)}</text>` +
    body +
    `</svg>\n`
  );
}

function noData(width: number, height: number, title: string): string {
  return frame(
    width,
    height,
    title,
    `<text x="${width / 2}" y="${height / 2}" text-anchor="middle" fill="#888">no data</text>`,
  );
}

export function lineChart(spec: LineChart): string {
  const width = spec.width ?? 760;
  const height = spec.height ?? 400;
  const series = spec.series
    .map((s) => ({
      ...s,
      points: s.points.filter(
        (p) => Number.isFinite(p.x) && Number.isFinite(p.y) && (!spec.logX || p.x > 0),
      ),
    }))
    .filter((s) => s.points.length > 0);
  if (series.length === 0) return noData(width, height, spec.title);
  const legendWidth = 190;
  const m = { left: 62, right: legendWidth + 16, top: 32, bottom: 48 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const tx = (x: number): number => (spec.logX ? Math.log2(x) : x);
  let x0 = Math.min(...xs.map(tx));
  let x1 = Math.max(...xs.map(tx));
  if (x0 === x1) {
    x0 -= 1;
    x1 += 1;
  }
  const yMax = Math.max(
    ...series.flatMap((s) => s.points.map((p) => p.y)),
    ...(spec.refLines ?? []).map((r) => r.y),
  );
  const { top, step } = niceScale(yMax);
  const px = (x: number): number => m.left + ((tx(x) - x0) / (x1 - x0)) * pw;
  const py = (y: number): number => m.top + ph - (Math.max(0, y) / top) * ph;
  const yf = spec.yFormat ?? fmt;
  const xf = spec.xFormat ?? fmt;
  let body = "";
  for (let y = 0; y <= top + step / 2; y += step) {
    body += `<line x1="${m.left}" x2="${m.left + pw}" y1="${py(y)}" y2="${py(y)}" stroke="#e5e5e5"/>`;
    body += `<text x="${m.left - 6}" y="${py(y) + 4}" text-anchor="end">${escapeXml(yf(y))}</text>`;
  }
  const uniqueX = [...new Set(xs)].sort((a, b) => a - b);
  // Ticks closer than 3% (e.g. the stack's and the ceiling's "largest fit") would print on top of
  // each other: keep the first of such a cluster.
  const spaced = uniqueX.filter((x, i) => i === 0 || x > (uniqueX[i - 1] ?? 0) * 1.03);
  const shown =
    spaced.length > 12 ? spaced.filter((_, i) => i % Math.ceil(spaced.length / 12) === 0) : spaced;
  for (const x of shown) {
    body += `<line x1="${px(x)}" x2="${px(x)}" y1="${m.top + ph}" y2="${m.top + ph + 4}" stroke="#444"/>`;
    body += `<text x="${px(x)}" y="${m.top + ph + 16}" text-anchor="middle">${escapeXml(xf(x))}</text>`;
  }
  body += `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`;
  for (const r of spec.refLines ?? []) {
    body += `<line x1="${m.left}" x2="${m.left + pw}" y1="${py(r.y)}" y2="${py(r.y)}" stroke="#555" stroke-dasharray="2,3"/>`;
    body += `<text x="${m.left + 4}" y="${py(r.y) - 4}" fill="#555">${escapeXml(r.label)}</text>`;
  }
  series.forEach((s, i) => {
    const c = color(s.color ?? i);
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    const d = sorted
      .map((p, j) => `${j === 0 ? "M" : "L"}${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`)
      .join(" ");
    body += `<path d="${d}" fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6,4"' : ""}/>`;
    for (const p of sorted)
      body += `<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="2.5" fill="${c}"/>`;
    const ly = m.top + 8 + i * 16;
    const lx = width - legendWidth;
    body += `<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6,4"' : ""}/>`;
    body += `<text x="${lx + 28}" y="${ly + 4}">${escapeXml(s.name)}</text>`;
  });
  body += `<text x="${m.left + pw / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`;
  body += `<text transform="translate(14 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`;
  return frame(width, height, spec.title, body);
}

export function barChart(spec: BarChart): string {
  const width = spec.width ?? 760;
  const height = spec.height ?? 360;
  const values = spec.series.flatMap((s) => s.values).filter(Number.isFinite);
  if (spec.categories.length === 0 || values.length === 0) return noData(width, height, spec.title);
  const legendWidth = 190;
  const m = { left: 62, right: legendWidth + 16, top: 32, bottom: 48 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const { top, step } = niceScale(Math.max(...values));
  const py = (y: number): number => m.top + ph - (Math.max(0, y) / top) * ph;
  const yf = spec.yFormat ?? fmt;
  const group = pw / spec.categories.length;
  const barW = (group * 0.8) / Math.max(1, spec.series.length);
  let body = "";
  for (let y = 0; y <= top + step / 2; y += step) {
    body += `<line x1="${m.left}" x2="${m.left + pw}" y1="${py(y)}" y2="${py(y)}" stroke="#e5e5e5"/>`;
    body += `<text x="${m.left - 6}" y="${py(y) + 4}" text-anchor="end">${escapeXml(yf(y))}</text>`;
  }
  spec.categories.forEach((cat, ci) => {
    const gx = m.left + ci * group + group * 0.1;
    spec.series.forEach((s, si) => {
      const v = s.values[ci];
      if (v === undefined || !Number.isFinite(v)) return;
      const x = gx + si * barW;
      body += `<rect x="${x.toFixed(1)}" y="${py(v).toFixed(1)}" width="${(barW - 1).toFixed(1)}" height="${(m.top + ph - py(v)).toFixed(1)}" fill="${color(si)}"><title>${escapeXml(`${s.name} ${cat}: ${yf(v)}`)}</title></rect>`;
    });
    body += `<text x="${(m.left + ci * group + group / 2).toFixed(1)}" y="${m.top + ph + 16}" text-anchor="middle">${escapeXml(cat)}</text>`;
  });
  body += `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`;
  spec.series.forEach((s, i) => {
    const ly = m.top + 8 + i * 16;
    const lx = width - legendWidth;
    body += `<rect x="${lx}" y="${ly - 6}" width="14" height="10" fill="${color(i)}"/>`;
    body += `<text x="${lx + 20}" y="${ly + 4}">${escapeXml(s.name)}</text>`;
  });
  body += `<text transform="translate(14 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`;
  return frame(width, height, spec.title, body);
}
