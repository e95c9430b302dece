/**
 * The report as a list of blocks, rendered twice: Markdown (report.md) and HTML (index.html).
 * One model, two renderers, so the two never disagree.
 */
import { escapeXml } from "./svg.ts";

export type Block =
  | { kind: "heading"; level: 1 | 2 | 3; text: string }
  | { kind: "para"; text: string }
  | { kind: "list"; items: string[] }
  | { kind: "table"; head: string[]; rows: string[][] }
  | { kind: "chart"; file: string; alt: string; svg: string };

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
    }
  }
  return out.join("\n\n") + "\n";
}

/** Inline `code` spans are the only markup the text carries. */
function inline(text: string): string {
  return escapeXml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}td.num{text-align:right}code{background:#f3f3f3;padding:0 3px}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}.met{color:#1a7f37;font-weight:bold}.missed{color:#c00;font-weight:bold}`;

export function toHtml(title: string, blocks: readonly Block[]): string {
  const body = blocks
    .map((b) => {
      switch (b.kind) {
        case "heading":
          return `<h${b.level}>${inline(b.text)}</h${b.level}>`;
        case "para":
          return `<p>${inline(b.text)}</p>`;
        case "list":
          return `<ul>${b.items.map((i) => `<li>${inline(i)}</li>`).join("")}</ul>`;
        case "table":
          return (
            `<table><thead><tr>${b.head.map((h) => `<th>${inline(h)}</th>`).join("")}</tr></thead><tbody>` +
            b.rows
              .map(
                (r) =>
                  `<tr>${r.map((c) => `<td${statusClass(c)}>${inline(c)}</td>`).join("")}</tr>`,
              )
              .join("") +
            `</tbody></table>`
          );
        case "chart":
          return `<figure><img src="${escapeXml(b.file)}" alt="${escapeXml(b.alt)}"></figure>`;
      }
    })
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body>
${body}
</body></html>
`;
}

const NUMERIC = /^[-+±~]?[\d.,]+(\s?(%|ms|µs|s|MB\/s|MiB|KiB|MB))?(\s\([^)]*\))?$/;

function statusClass(cell: string): string {
  if (cell === "MET") return ' class="met"';
  if (cell === "MISSED") return ' class="missed"';
  return NUMERIC.test(cell) ? ' class="num"' : "";
}
