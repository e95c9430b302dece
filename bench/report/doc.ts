/**
 * The report is a list of blocks, rendered twice: Markdown (report.md, charts as SVG files next
 * to it) and HTML (index.html, charts inline, so the page is one self-contained file).
 * One model, two renderers, so the two never disagree.
 */
import type { Chart } from "./charts.ts";
import type { VerdictStatus } from "./verdict.ts";

export type Block =
  | { kind: "heading"; level: 1 | 2 | 3; text: string }
  | { kind: "para"; text: string }
  | { kind: "verdict"; status: VerdictStatus; text: string }
  | { kind: "list"; items: string[] }
  | { kind: "table"; head: string[]; rows: string[][] }
  | { kind: "chart"; file: string; alt: string; chart: Chart }
  /** Where the HTML page lists its sections (after the summary); nothing in Markdown. */
  | { kind: "contents" };

/** A table under its own level-3 heading. */
export function headedTable(text: string, head: string[], rows: string[][]): Block[] {
  return [
    { kind: "heading", level: 3, text },
    { kind: "table", head, rows },
  ];
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) =>
    c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === "&" ? "&amp;" : c === '"' ? "&quot;" : "&apos;",
  );
}

export function toMarkdown(blocks: readonly Block[]): string {
  const out: string[] = [];
  for (const b of blocks) {
    switch (b.kind) {
      case "heading":
        out.push(`${"#".repeat(b.level)} ${b.text}`);
        break;
      case "para":
        out.push(b.text);
        break;
      case "verdict":
        out.push(`**Verdict: ${b.status}** (${b.text})`);
        break;
      case "list":
        out.push(b.items.map((i) => `- ${i}`).join("\n"));
        break;
      case "table": {
        const cell = (c: string): string => c.replace(/\|/g, "\\|");
        out.push(
          [
            `| ${b.head.map(cell).join(" | ")} |`,
            `|${b.head.map(() => "---").join("|")}|`,
            ...b.rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
          ].join("\n"),
        );
        break;
      }
      case "chart":
        out.push(`![${b.alt}](${b.file})`);
        break;
      case "contents":
        break;
    }
  }
  return out.join("\n\n") + "\n";
}

/** Inline `code` spans are the only markup the text carries. */
function inline(text: string): string {
  return escapeXml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

/** Stands for the contents list until the headings after it are known. */
const CONTENTS = "\u0000contents\u0000";

/** "8. Capacity model and …" → "capacity-model-and"; unique within the page. */
function slugger(): (text: string) => string {
  const seen = new Map<string, number>();
  return (text) => {
    const base =
      text
        .toLowerCase()
        .replace(/^[\d.\s]+/, "")
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-|-$/g, "")
        .slice(0, 48) || "section";
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n === 0 ? base : `${base}-${n + 1}`;
  };
}

/** The chart's id in the page: its file name without the extension. */
export function chartId(file: string): string {
  return file.replace(/\.svg$/, "");
}

const STYLE = `:root{color-scheme:light}
body{font-family:"Liberation Sans","DejaVu Sans",Arial,sans-serif;max-width:1180px;margin:0 auto;padding:1.5em 1.5em 4em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6em;margin:.2em 0 .4em}h2{font-size:1.3em;margin-top:2.2em;padding-top:.6em;border-top:1px solid #ddd}h3{font-size:1.05em;margin-top:1.6em}
p,li{max-width:75em}code{background:#f2f2f4;padding:0 3px;border-radius:3px;font-size:.92em}
.verdict{display:inline-block;padding:.5em .9em;border-radius:6px;font-weight:bold;margin:.4em 0}
.verdict.PASS{background:#e3f4e8;color:#135c2a}.verdict.PARTIAL{background:#fff4d6;color:#6b4e00}
.verdict.MISSED{background:#fde7d4;color:#7a3300}.verdict.FAIL{background:#fbe0e0;color:#8a1010}
.verdict span{font-weight:normal}
nav{background:#f7f7f9;border:1px solid #e4e4e8;border-radius:6px;padding:.6em 1em;margin:1em 0;font-size:.95em}
nav ol{margin:.3em 0;padding-left:1.4em;columns:2}nav a{color:#0b57d0;text-decoration:none}
.table{overflow-x:auto;margin:.8em 0}table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #d8d8de;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f2f2f4}td:first-child{min-width:9em}
td.num{text-align:right;white-space:nowrap}td.met{color:#135c2a;font-weight:bold}td.missed{color:#a01010;font-weight:bold}
td.unmeasured{color:#6b4e00;font-weight:bold}
figure.chart{margin:1.2em 0;overflow-x:auto}figure.chart svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#555;margin-top:.3em}`;

/**
 * index.html: the blocks in order, every chart inline, and a contents list where the blocks put
 * one (else right after the verdict).
 */
export function toHtml(
  title: string,
  blocks: readonly Block[],
  svgs: ReadonlyMap<string, string>,
): string {
  const slug = slugger();
  const toc: Array<{ id: string; text: string }> = [];
  const body = blocks.map((b) => {
    switch (b.kind) {
      case "heading": {
        if (b.level !== 2) return `<h${b.level}>${inline(b.text)}</h${b.level}>`;
        const id = slug(b.text);
        toc.push({ id, text: b.text });
        return `<h2 id="${id}">${inline(b.text)}</h2>`;
      }
      case "para":
        return `<p>${inline(b.text)}</p>`;
      case "verdict":
        return `<div class="verdict ${b.status}">${b.status} <span>(${inline(b.text)})</span></div>`;
      case "list":
        return `<ul>${b.items.map((i) => `<li>${inline(i)}</li>`).join("")}</ul>`;
      case "table":
        return (
          `<div class="table"><table><thead><tr>${b.head.map((h) => `<th>${inline(h)}</th>`).join("")}</tr></thead><tbody>` +
          b.rows
            .map(
              (r) => `<tr>${r.map((c) => `<td${statusClass(c)}>${inline(c)}</td>`).join("")}</tr>`,
            )
            .join("") +
          `</tbody></table></div>`
        );
      case "contents":
        return CONTENTS;
      case "chart": {
        const id = chartId(b.file);
        const svg = svgs.get(b.file) ?? "";
        return `<figure class="chart" id="chart-${escapeXml(id)}" data-chart="${escapeXml(id)}" data-series="${b.chart.series}" role="img" aria-label="${escapeXml(b.alt)}">${svg}<figcaption>${inline(b.alt)} (<a href="${escapeXml(b.file)}">${escapeXml(b.file)}</a>)</figcaption></figure>`;
      }
    }
  });
  const nav =
    `<nav aria-label="contents"><strong>Contents</strong><ol>` +
    toc.map((t) => `<li><a href="#${t.id}">${inline(t.text)}</a></li>`).join("") +
    `</ol></nav>`;
  let html: string;
  if (body.includes(CONTENTS)) {
    html = body.map((x) => (x === CONTENTS ? nav : x)).join("\n");
  } else {
    const at = blocks.findIndex((b) => b.kind === "verdict");
    const i = at >= 0 ? at + 1 : 1;
    html = [...body.slice(0, i), nav, ...body.slice(i)].join("\n");
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(title)}</title>
<link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body>
${html}
</body></html>
`;
}

const NUMERIC = /^[-+±~]?[\d.,]+(\s?(%|ms|µs|s|MB\/s|MiB|KiB|MB|Gbit\/s|×))?(\s\([^)]*\))?$/;

function statusClass(cell: string): string {
  if (cell === "MET") return ' class="met"';
  if (cell === "MISSED") return ' class="missed"';
  if (cell === "NOT MEASURED") return ' class="unmeasured"';
  return NUMERIC.test(cell) ? ' class="num"' : "";
}
