// @pure
/**
 * The repo explains itself. No tracked text file may cite a document a clone does not contain
 * (an outside protocol text or its checklist, outside measurement notes, a tracker number, a
 * path outside the checkout), and every citation of the repo's own documents must resolve: a
 * section sign after docs/protocol.md names one of its numbered headings, a decision number one
 * of docs/decisions.md, and a quoted heading after a docs/ file one of that file's headings.
 * Measurement data (the kept reports under docs/bench/latest/ and docs/soak/latest/, reports/) and generated
 * files are not read.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { test } from "node:test";

const root = resolve(import.meta.dirname, "../..");
const SECTION = "\u00a7";

/** Text that is data or generated, not something a person wrote to be read. */
const SKIPPED = [
  /^docs\/(bench|soak)\/latest\//, // the kept reports (D68)
  /^reports\//,
  /(^|\/)node_modules\//,
  /(^|\/)dist\//,
  /\.svg$/,
  /(^|\/)package-lock\.json$/,
];

/** Line breaks and comment leaders that may sit between the words of one citation. */
const GAP = String.raw`[\s*/#>]*`;

function walk(dir: string, out: string[]): string[] {
  for (const entry of readdirSync(dir)) {
    if (entry === ".git" || entry === "node_modules" || entry === "dist") continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path, out);
    else out.push(relative(root, path));
  }
  return out;
}

/** The files git tracks (a copy without .git: every file but the skipped folders). */
function trackedFiles(): string[] {
  let files: string[];
  try {
    files = execFileSync("git", ["ls-files", "-z"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    })
      .split("\0")
      .filter(Boolean);
  } catch {
    files = walk(root, []);
  }
  return files.filter((f) => !SKIPPED.some((re) => re.test(f)));
}

interface TextFile {
  path: string;
  text: string;
}

function textFiles(): TextFile[] {
  const out: TextFile[] = [];
  for (const path of trackedFiles()) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(root, path));
    } catch {
      continue; // deleted in the work tree, not yet in the index
    }
    if (bytes.subarray(0, 8000).includes(0)) continue; // binary
    out.push({ path, text: bytes.toString("utf8") });
  }
  return out;
}

const files = textFiles();

/** Fails with every finding, one a line (a deep-equal diff would cut the list short). */
function assertNone(found: string[], what: string): void {
  assert.ok(found.length === 0, `${found.length} ${what}:\n${found.join("\n")}`);
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function where(file: TextFile, index: number, match: string): string {
  const snippet = match.replace(/\s+/g, " ").slice(0, 60);
  return `${file.path}:${lineOf(file.text, index)}: ${snippet}`;
}

/** The numbered headings of docs/protocol.md by number (`## 6. …` is 6, `### 6.4 …` is 6.4). */
function protocolSections(): Map<string, string> {
  const text = readFileSync(join(root, "docs/protocol.md"), "utf8");
  const sections = new Map<string, string>();
  for (const m of text.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? (.+)$/gm)) {
    sections.set(m[1]!, m[2]!);
  }
  return sections;
}

/** Decision numbers of docs/decisions.md, from their bold lead-ins ("- **D7. …"). */
function decisionNumbers(): number[] {
  const text = readFileSync(join(root, "docs/decisions.md"), "utf8");
  return [...text.matchAll(/^- \*\*D(\d+)\. /gm)].map((m) => Number(m[1]));
}

function headingsOf(path: string): string[] {
  const text = readFileSync(join(root, path), "utf8");
  return [...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.toLowerCase());
}

/** References to documents that are not in the repo, each with what it points at. */
const OUTSIDE: { what: string; re: RegExp }[] = [
  {
    what: "the outside protocol digest",
    re: new RegExp(String.raw`\bdigest${GAP}${SECTION}`, "gi"),
  },
  { what: "an outside conformance checklist", re: /\bchecklist\s+(items?\s+)?\d/gi },
  {
    what: "outside measurement or style notes",
    re: /\bperformance[- ]anchors\b|\banchors?\s+[AB]\d|\bstyle-anchor[s]\b|\breference-sdk[s]\b/gi,
  },
  { what: "a tracker number", re: /\bissues?\s+#?\d+/gi },
  { what: "a path outside the checkout", re: /\.\.\/shared\/|\/work\/(shared|notes)\//g },
  {
    what: "the outside decisions file (cite Dn of docs/decisions.md)",
    re: /\bDECISION[S](\.md)?\b/g,
  },
  {
    what: "the outside blob transfer text",
    re: new RegExp(String.raw`\bblob-transfer(\.zh)?(\.md\b|${GAP}${SECTION})`, "g"),
  },
  {
    what: "outside spec files",
    re: /\b(room-model|data-structures|error-handling|versioning|CLAUDE)\.md\b/g,
  },
  {
    what: "outside notes",
    re: new RegExp(String.raw`\bmigration${GAP}${SECTION}|\bteam\s+brief\b`, "gi"),
  },
];

/** "protocol.md §1.3", "protocol.md §1.2–§1.4, §6.9": the span and the section numbers in it. */
const PROTOCOL_CITE = new RegExp(
  String.raw`\bprotocol\.md${GAP}((?:${SECTION}\d+(?:\.\d+)*(?:${GAP}(?:,|;|and|or|–|-)${GAP}(?=${SECTION}))?)+)`,
  "g",
);
const RFC_CITE = new RegExp(String.raw`\bRFC\s*\d+${GAP}${SECTION}\d+(?:\.\d+)*`, "g");
const ANY_MD_SECTION = new RegExp(String.raw`\b([\w.-]+\.md)${GAP}${SECTION}`, "g");

void test("no file cites a document the repo does not contain", () => {
  const found: string[] = [];
  for (const file of files) {
    for (const { what, re } of OUTSIDE) {
      for (const m of file.text.matchAll(re)) found.push(`${where(file, m.index, m[0])} (${what})`);
    }
    for (const m of file.text.matchAll(ANY_MD_SECTION)) {
      if (m[1] !== "protocol.md") {
        found.push(`${where(file, m.index, m[0])} (${m[1]} has no numbered sections here)`);
      }
    }
  }
  assertNone(found, "references to documents the repo does not contain");
});

void test("every section sign belongs to a citation of docs/protocol.md (or an RFC)", () => {
  const found: string[] = [];
  for (const file of files) {
    if (file.path === "docs/protocol.md") continue; // its own cross-references, checked below
    const covered: [number, number][] = [];
    for (const re of [PROTOCOL_CITE, RFC_CITE]) {
      for (const m of file.text.matchAll(re)) covered.push([m.index, m.index + m[0].length]);
    }
    for (const m of file.text.matchAll(new RegExp(`${SECTION}\\S{0,20}`, "g"))) {
      if (!covered.some(([a, b]) => m.index >= a && m.index < b)) {
        const start = Math.max(0, m.index - 30);
        found.push(
          `${where(file, m.index, file.text.slice(start, m.index + 12))} (which document?)`,
        );
      }
    }
  }
  assertNone(found, "section signs that cite no document of the repo");
});

void test("every cited section of docs/protocol.md exists", () => {
  const sections = protocolSections();
  const missing: string[] = [];
  for (const file of files) {
    const spans =
      file.path === "docs/protocol.md"
        ? [...file.text.matchAll(new RegExp(`${SECTION}(\\d+(?:\\.\\d+)*)`, "g"))].map((m) => ({
            index: m.index,
            numbers: [m[1]!],
          }))
        : [...file.text.matchAll(PROTOCOL_CITE)].map((m) => ({
            index: m.index,
            numbers: [...m[1]!.matchAll(new RegExp(`${SECTION}(\\d+(?:\\.\\d+)*)`, "g"))].map(
              (n) => n[1]!,
            ),
          }));
    for (const { index, numbers } of spans) {
      for (const n of numbers) {
        if (!sections.has(n)) missing.push(where(file, index, `${SECTION}${n}`));
      }
    }
  }
  assertNone(missing, "cited sections missing from docs/protocol.md");
});

void test("every decision number cited exists in docs/decisions.md", () => {
  const numbers = decisionNumbers();
  const known = new Set(numbers);
  const missing: string[] = [];
  for (const file of files) {
    for (const m of file.text.matchAll(/(?<![\w#])D(\d{1,2})\b/g)) {
      if (!known.has(Number(m[1]))) missing.push(where(file, m.index, m[0]));
    }
  }
  assertNone(missing, "cited decisions missing from docs/decisions.md");
});

void test("a heading quoted after a docs/ file is a heading of that file", () => {
  const docs = new Set(readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")));
  const cite = new RegExp(String.raw`\b([a-z-]+\.md)(?:[,:]${GAP}|${GAP}\()"([^"]{3,100})"`, "g");
  const missing: string[] = [];
  for (const file of files) {
    for (const m of file.text.matchAll(cite)) {
      const doc = m[1]!;
      if (!docs.has(doc)) continue;
      const quoted = m[2]!
        .replace(/[\s*/#>]+/g, " ")
        .trim()
        .toLowerCase();
      if (!headingsOf(`docs/${doc}`).some((h) => h.includes(quoted))) {
        missing.push(where(file, m.index, m[0]));
      }
    }
  }
  assertNone(missing, "quoted headings missing from their docs/ file");
});

void test("docs/protocol.md numbers its sections in order and docs/decisions.md has D1..Dn", () => {
  const keys = [...protocolSections().keys()];
  assert.equal(new Set(keys).size, keys.length, "a section number is used twice");
  const byTop = new Map<string, number[]>();
  for (const k of keys) {
    const [top, sub] = k.split(".");
    if (sub !== undefined) byTop.set(top!, [...(byTop.get(top!) ?? []), Number(sub)]);
  }
  const tops = keys.filter((k) => !k.includes(".")).map(Number);
  assert.deepEqual(
    tops,
    tops.map((_, i) => i + 1),
    "top-level sections are not 1..n",
  );
  for (const [top, subs] of byTop) {
    assert.ok(tops.includes(Number(top)), `${SECTION}${top}.x has no ${SECTION}${top}`);
    assert.deepEqual(
      subs,
      subs.map((_, i) => i + 1),
      `${SECTION}${top}.x are not 1..n`,
    );
  }
  const numbers = decisionNumbers();
  assert.ok(numbers.length > 0);
  assert.deepEqual(
    numbers,
    numbers.map((_, i) => i + 1),
  );
});
