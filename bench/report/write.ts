/** Writes report.json, report.md, the SVG charts and index.html into the run's folder. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { toHtml, toMarkdown, type Block } from "./doc.ts";
import type { Report } from "./types.ts";

export function writeReport(dir: string, report: Report, blocks: readonly Block[]): string[] {
  mkdirSync(dir, { recursive: true });
  const files = ["report.json", "report.md", "index.html"];
  writeFileSync(join(dir, "report.json"), JSON.stringify(report, null, 2) + "\n");
  for (const b of blocks) {
    if (b.kind === "chart") {
      writeFileSync(join(dir, b.file), b.svg);
      files.push(b.file);
    }
  }
  writeFileSync(join(dir, "report.md"), toMarkdown(blocks));
  writeFileSync(join(dir, "index.html"), toHtml(report.meta.title, blocks));
  return files;
}
