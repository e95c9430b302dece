/**
 * Opens a bench report's index.html in headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) and reads what a person would see of each chart: its tick labels and legend
 * entries with their boxes as laid out by the browser's real fonts.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Box {
  text: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface ChartView {
  id: string;
  /** How many series the report says the chart has (data-series). */
  series: number;
  /** Visible tick labels, one list per axis. */
  axes: Box[][];
  /** Visible legend labels. */
  legend: Box[];
}

export interface ReportPage {
  browser: Browser;
  page: Page;
  /** Console errors and warnings, page errors, and every request that is not the page itself. */
  problems: string[];
  charts: ChartView[];
  close(): Promise<void>;
}

/**
 * Runs in the page. A string, not a function: tsx's compiler wraps named functions in a helper
 * (`__name`) that does not exist in the browser. Vega hides a label it drops for overlap with
 * opacity 0: only what shows counts.
 */
const READ_CHARTS = `(() => {
  const box = (t) => {
    const r = t.getBoundingClientRect();
    return { text: t.textContent || "", x: r.x, y: r.y, width: r.width, height: r.height };
  };
  const visible = (t) => t.getAttribute("opacity") !== "0" && t.getBoundingClientRect().width > 0;
  const all = (root, selector) => [...root.querySelectorAll(selector)];
  return all(document, "figure.chart").map((f) => ({
    id: f.getAttribute("data-chart") || "",
    series: Number(f.getAttribute("data-series") || "0"),
    axes: all(f, 'g.role-axis[aria-roledescription="axis"]').map((a) => all(a, "g.role-axis-label text").filter(visible).map(box)),
    legend: all(f, "g.role-legend-label text").filter(visible).map(box),
  }));
})()`;

export async function openReport(dir: string): Promise<ReportPage> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    const url = pathToFileURL(join(dir, "index.html")).href;
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning")
        problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`failed load: ${r.url()}`));
    page.on("request", (r) => {
      if (r.url() !== url && !r.url().startsWith("data:")) problems.push(`request: ${r.url()}`);
    });
    await page.goto(url, { waitUntil: "load" });
    const charts = await page.evaluate<ChartView[]>(READ_CHARTS);
    return { browser, page, problems, charts, close: () => browser.close() };
  } catch (err) {
    await browser.close();
    throw err;
  }
}

/** Pairs of boxes that overlap by more than `tolerance` pixels in both directions. */
export function overlaps(boxes: readonly Box[], tolerance = 0.5): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i]!;
      const b = boxes[j]!;
      const dx = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
      const dy = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
      if (dx > tolerance && dy > tolerance) out.push([a.text, b.text]);
    }
  }
  return out;
}

/**
 * What every chart must show: tick labels on its axes, none overlapping another (across all of
 * the chart's axes: the panels of a faceted chart sit side by side), and a legend naming every
 * series where there are two or more, none cut short. Returns the failures, one line each.
 */
export function chartProblems(c: ChartView): string[] {
  const out: string[] = [];
  const ticks = c.axes.flat();
  if (c.axes.length < 2) out.push(`${c.id}: ${c.axes.length} axes`);
  for (const [i, axis] of c.axes.entries())
    if (axis.length < 2) out.push(`${c.id}: axis ${i} shows ${axis.length} tick labels`);
  for (const [a, b] of overlaps(ticks)) out.push(`${c.id}: tick labels "${a}" and "${b}" overlap`);
  if (c.series >= 2) {
    if (c.legend.length < c.series)
      out.push(`${c.id}: legend names ${c.legend.length} of ${c.series} series`);
    for (const l of c.legend)
      if (l.text.endsWith("…")) out.push(`${c.id}: legend label "${l.text}" cut short`);
    for (const [a, b] of overlaps(c.legend))
      out.push(`${c.id}: legend labels "${a}" and "${b}" overlap`);
  }
  return out;
}
