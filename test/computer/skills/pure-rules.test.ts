// @pure
// The pure rules of the SKILL channel: the name lexer (protocol.md §7.2), the MIME table and text rule (protocol.md §7.8),
// the D21 fence rule, and the documented `allowed-tools` split rule.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MAX_FRONTMATTER_BYTES,
  normalizeAllowedTools,
  parseFrontmatter,
  stripFrontmatter,
} from "../../../computer/skills/frontmatter.ts";
import { isTextMime } from "../../../protocol/index.ts";
import { lexSkillName, mimeForPath } from "../../../computer/skills/sandbox.ts";

void test("name lexer: 1/2/3 segments, kebab leaves, bundle ids verbatim", () => {
  assert.deepEqual(lexSkillName("pdf"), { kind: "user", skill: "pdf" });
  assert.deepEqual(lexSkillName("mcp:pdf"), { kind: "marketplace", plugin: "mcp", skill: "pdf" });
  assert.deepEqual(lexSkillName("mcp:My_Server-2:pdf-tools"), {
    kind: "mcp",
    bundleId: "My_Server-2",
    skill: "pdf-tools",
  });
  assert.ok(lexSkillName("a".repeat(64)));
  for (const bad of [
    "",
    "a".repeat(65),
    "-a",
    "a-",
    "a--b",
    "A",
    "a_b",
    "a.b",
    "a b",
    "a:",
    ":a",
    "a::b",
    "x:y:z",
    "mcp::a",
    "mcp:a__b:c",
    "mcp:a.b:c",
    "mcp:a:B",
    "mcp:a:b:c",
    "é",
    "a\0",
  ]) {
    assert.equal(lexSkillName(bad), null, JSON.stringify(bad));
  }
});

void test("MIME table is deterministic and the text rule follows protocol.md §7.8", () => {
  assert.equal(mimeForPath("x/SKILL.md"), "text/markdown");
  assert.equal(mimeForPath("Makefile"), "application/octet-stream");
  assert.equal(mimeForPath(".env"), "application/octet-stream");
  assert.equal(mimeForPath("a.tar.GZ"), "application/gzip");
  assert.equal(mimeForPath("logo.svg"), "image/svg+xml");
  for (const t of [
    "text/plain",
    "image/svg+xml",
    "application/ld+json",
    "application/atom+xml",
    "application/x+yaml",
    "APPLICATION/JSON; charset=utf-8",
    "application/toml",
    "application/javascript",
  ]) {
    assert.ok(isTextMime(t), t);
  }
  for (const b of ["image/png", "application/pdf", "application/octet-stream", "application/zip"]) {
    assert.ok(!isTextMime(b), b);
  }
});

void test("fence rule: first line, next fence line, CRLF/BOM/trailing blanks, bounded search", () => {
  const s = (t: string) => stripFrontmatter(Buffer.from(t)).toString();
  assert.equal(s("---\na: 1\n---\nbody"), "body");
  assert.equal(s("---\r\na: 1\r\n---\r\nbody\r\n"), "body\r\n");
  assert.equal(s("---\na: 1\n---"), ""); // closing fence at end of file
  assert.equal(s("--- \na: 1\n---\t\nbody"), "body");
  assert.equal(s("\n---\na: 1\n---\nbody"), "\n---\na: 1\n---\nbody"); // not on the first line
  assert.equal(s("----\na\n---\nb"), "----\na\n---\nb");
  assert.equal(s("---\na: 1\nbody"), "---\na: 1\nbody"); // never closed
  const far = `---\nx: "${"y".repeat(MAX_FRONTMATTER_BYTES)}"\n---\nbody`;
  assert.equal(s(far), far); // closing fence beyond the bound: no frontmatter
});

void test("allowed-tools: lists keep strings; strings split on commas/whitespace outside parentheses", () => {
  const w: string[] = [];
  assert.deepEqual(normalizeAllowedTools("Read, Grep  Glob", w), ["Read", "Grep", "Glob"]);
  assert.deepEqual(normalizeAllowedTools("Bash(git add:*) Bash(npm run test:*),Read", w), [
    "Bash(git add:*)",
    "Bash(npm run test:*)",
    "Read",
  ]);
  assert.deepEqual(normalizeAllowedTools(["Read", " ", 3, " Write "], w), ["Read", "Write"]);
  assert.deepEqual(normalizeAllowedTools("", w), []);
  assert.equal(normalizeAllowedTools(undefined, w), undefined);
  assert.equal(normalizeAllowedTools({ a: 1 }, w), undefined);
  assert.equal(w.length, 2);
});

void test("frontmatter parse: mandatory fields strict, optional ones lenient with warnings", () => {
  const p = (t: string) => parseFrontmatter(Buffer.from(t));
  const ok = p("name: a\ndescription: d\nlicense: 3\nmetadata: [x]\nextra: kept-out\n");
  assert.ok(ok.ok);
  assert.deepEqual(ok.value, { name: "a", description: "d" });
  assert.equal(ok.warnings.length, 2);
  assert.ok(!p("name: a\ndescription: '   '\n").ok);
  // 0.4.0 tags: a list of strings passes through; anything else is left out with a warning.
  const tagged = p("name: a\ndescription: d\ntags: [x, 'y z']\n");
  assert.ok(tagged.ok);
  assert.deepEqual(tagged.value.tags, ["x", "y z"]);
  for (const bad of ["tags: x", "tags: [1]", "tags: {a: 1}"]) {
    const r = p(`name: a\ndescription: d\n${bad}\n`);
    assert.ok(r.ok);
    assert.equal(r.value.tags, undefined, bad);
    assert.equal(r.warnings.length, 1, bad);
  }
  assert.ok(!p("name: 5\ndescription: d\n").ok);
  // An alias bomb ("billion laughs") is refused, not expanded.
  const bomb = ["name: a", "description: d", 'l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 8; i++)
    bomb.push(
      `l${i}: &l${i} [${Array(10)
        .fill(`*l${i - 1}`)
        .join(",")}]`,
    );
  const exploded = p(bomb.join("\n"));
  assert.ok(!exploded.ok && exploded.error.includes("not valid YAML"));
  assert.ok(!parseFrontmatter(Buffer.from([0x6e, 0x3a, 0xff])).ok); // not UTF-8
});
