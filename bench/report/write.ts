/**
 * Writes report.json, report.md, one SVG per chart and index.html (the charts inline) into the
 * run's folder. Returns the files written. report.json and report.md come out as the repository's
 * formatter would write them, so a run committed under docs/bench passes `npm run check` as it is
 * (index.html is generated whole and listed in .prettierignore: formatted, its inline SVG doubles).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import { chartId, toHtml, toMarkdown, type Block } from "./doc.ts";
import type { Report } from "./types.ts";
import { renderSvg } from "./vega.ts";

export async function writeReport(
  dir: string,
  report: Report,
  blocks: readonly Block[],
): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const files = ["report.json", "report.md", "index.html"];
  writeFileSync(join(dir, "report.json"), await formatted(JSON.stringify(report), "report.json"));
  const svgs = new Map<string, string>();
  for (const b of blocks) {
    if (b.kind !== "chart") continue;
    const svg = await renderSvg(b.chart.spec, chartId(b.file));
    svgs.set(b.file, svg);
    writeFileSync(join(dir, b.file), svg + "\n");
    files.push(b.file);
  }
  writeFileSync(join(dir, "report.md"), await formatted(toMarkdown(blocks), "report.md"));
  writeFileSync(join(dir, "index.html"), toHtml(report.meta.title, blocks, svgs));
  return files;
}

/**
 * `text` formatted by prettier with the repository's settings, as a file named `name` (also the
 * soak's report.md, committed the same way: D68).
 */
export async function formatted(text: string, name: string): Promise<string> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const options = (await prettier.resolveConfig(join(root, "package.json"))) ?? {};
  return prettier.format(text, { ...options, filepath: name });
}

/**
 * The report with machine paths replaced (an error message can carry the scratch folder or the
 * checkout's path): `[path, replacement]` pairs, longest first, applied to every string.
 */
export function redactPaths<T>(value: T, paths: ReadonlyArray<readonly [string, string]>): T {
  const pairs = paths.filter(([p]) => p.length > 1).sort((a, b) => b[0].length - a[0].length);
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) =>
      typeof v === "string" ? pairs.reduce((t, [p, r]) => t.split(p).join(r), v) : v,
    ),
  ) as T;
}
