// The chart generator makes standalone, well-formed SVG: escaped text, log2 axis, dashed series,
// reference lines, and a visible "no data" instead of NaN coordinates.
import { test } from "node:test";
import assert from "node:assert/strict";
import { barChart, escapeXml, lineChart, niceScale } from "../../bench/report/svg.ts";

function assertWellFormed(svg: string): void {
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.ok(svg.trimEnd().endsWith("</svg>"));
  assert.ok(!/NaN|Infinity|undefined/.test(svg), "no non-finite numbers leak into the SVG");
  // Every element closes, in order (a tiny tag-stack parser: enough for our generator's output).
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    const [, close, name, selfClose] = m;
    if (selfClose) continue;
    if (close) assert.equal(stack.pop(), name, `</${String(name)}> closes the open element`);
    else stack.push(name!);
  }
  assert.deepEqual(stack, []);
}

void test("line chart: log2 x, dashed series, reference line, escaped labels", () => {
  const svg = lineChart({
    title: "a < b & c",
    xLabel: "chunk",
    yLabel: "MB/s",
    logX: true,
    refLines: [{ y: 0.85, label: "85%" }],
    series: [
      {
        name: "w1 <stack>",
        points: [
          { x: 16384, y: 10 },
          { x: 65536, y: 40 },
          { x: 1048576, y: 30 },
        ],
      },
      {
        name: "w1 ceiling",
        dashed: true,
        color: 0,
        points: [
          { x: 16384, y: 12 },
          { x: 65536, y: NaN },
        ],
      },
    ],
  });
  assertWellFormed(svg);
  assert.ok(svg.includes("a &lt; b &amp; c"));
  assert.ok(svg.includes("w1 &lt;stack&gt;"));
  assert.ok(svg.includes('stroke-dasharray="6,4"'));
});

void test("empty or all-NaN data renders 'no data'", () => {
  for (const svg of [
    lineChart({
      title: "t",
      xLabel: "x",
      yLabel: "y",
      series: [{ name: "s", points: [{ x: 1, y: NaN }] }],
    }),
    barChart({ title: "t", yLabel: "y", categories: [], series: [] }),
  ]) {
    assertWellFormed(svg);
    assert.ok(svg.includes("no data"));
  }
});

void test("bar chart: one rect per finite value, with a tooltip", () => {
  const svg = barChart({
    title: "bars",
    yLabel: "MB/s",
    categories: ["1", "4"],
    series: [
      { name: "a", values: [1, 2] },
      { name: "b", values: [3, NaN] },
    ],
  });
  assertWellFormed(svg);
  assert.equal((svg.match(/<title>/g) ?? []).length, 3);
});

void test("nice scale covers the maximum with round steps", () => {
  for (const max of [0.93, 7, 42, 987, 12345]) {
    const { top, step } = niceScale(max);
    assert.ok(top >= max && top < max * 2.6, `${max} → ${top}`);
    assert.ok(Math.abs(top / step - Math.round(top / step)) < 1e-9);
  }
  assert.equal(escapeXml(`"'`), "&quot;&apos;");
});
