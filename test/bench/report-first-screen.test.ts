// @pure
// The report's first screen is what a planner reads in a minute: the verdict, one line on the run,
// the key figures, the key charts and the sizing table; the goals with their evidence, the machine
// and every section come after it (fixture-report.ts: the figures of a real full run).
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildBlocks } from "../../bench/report/build.ts";
import type { Block } from "../../bench/report/doc.ts";
import { toMarkdown } from "../../bench/report/doc.ts";
import { fixtureReport } from "./fixture-report.ts";

/** The blocks before the heading named `text` (level 2). */
function before(blocks: readonly Block[], text: string): Block[] {
  const i = blocks.findIndex((b) => b.kind === "heading" && b.level === 2 && b.text === text);
  assert.ok(i > 0, `the report has a "${text}" heading`);
  return blocks.slice(0, i);
}

void test("the summary comes first: key figures, the key charts, the sizing; goals after", async () => {
  const report = await fixtureReport();
  const blocks = buildBlocks(report);
  const top = before(blocks, "Goals");

  assert.equal(top[0]?.kind, "heading");
  assert.equal(top[1]?.kind, "verdict");
  const figures = top.find((b) => b.kind === "table" && b.head[0] === "figure");
  assert.ok(figures && figures.kind === "table", "a key figures table");
  const names = figures.rows.map((r) => r[0]);
  assert.ok(names.includes("One Agent, default settings, one large file"), names.join(" | "));
  assert.ok(names.includes("What one Server core relays"), names.join(" | "));
  // Every row the table shows carries a value measured in this run.
  for (const row of figures.rows) assert.ok(row[1] && row[1].length > 0, `${row[0]} has a value`);

  const charts = top.flatMap((b) => (b.kind === "chart" ? [b.file] : []));
  assert.deepEqual(charts, ["user-view.svg", "many-agents.svg"]);
  assert.ok(
    top.some((b) => b.kind === "heading" && b.text === "What one Server core and one node carry"),
    "the sizing table of the capacity model is on the first screen",
  );
  // No goal's text or evidence before the goals: the wall of text comes after the summary.
  for (const goal of report.goals)
    assert.ok(
      !top.some((b) => b.kind === "para" && b.text.includes(goal.text)),
      `goal "${goal.id}" is not in the summary`,
    );
});

void test("a chart lifted into the summary is drawn once, its section says where it went", async () => {
  const blocks = buildBlocks(await fixtureReport());
  for (const file of ["user-view.svg", "many-agents.svg"]) {
    const n = blocks.filter((b) => b.kind === "chart" && b.file === file).length;
    assert.equal(n, 1, `${file} drawn once`);
  }
  assert.ok(
    blocks.some((b) => b.kind === "para" && b.text === "Its chart is in the summary at the top."),
  );
  const md = toMarkdown(blocks);
  assert.ok(md.indexOf("## Summary") < md.indexOf("## Goals"));
  assert.ok(md.indexOf("](user-view.svg)") < md.indexOf("## Goals"));
});

void test("the one-agent figure compares the CLI with the bare relay of the same run", async () => {
  const report = await fixtureReport();
  const goal = report.goals.find((g) => g.id === "cli-vs-bare");
  assert.ok(goal, "the cli-vs-bare goal is judged");
  assert.equal(
    report.goals.some((g) => g.id === "default-vs-spec" || g.id.startsWith("cli-file-")),
    false,
    "the retired goals are gone (D67)",
  );
  assert.match(goal.measured, /CLI [\d.]+ MB\/s .* vs bare relay [\d.]+ MB\/s/);
});
