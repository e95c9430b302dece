// @pure
// Charts render to SVG in Node with Vega alone: no canvas module, no browser. Ids are scoped to
// their chart (two charts inline on one page do not share a clip path), and a specification Vega
// warns about is refused instead of drawn wrong.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { bytesX, renderSvg, scopeIds, type ChartSpec } from "../../bench/report/vega.ts";

const line = (clip: boolean): ChartSpec => ({
  width: 300,
  height: 150,
  data: { values: [16384, 65536, 1048576].map((x, i) => ({ x, y: 10 + i })) },
  mark: { type: "line", clip },
  encoding: {
    x: bytesX([16384, 1048576], "x", "chunk size"),
    y: { field: "y", type: "quantitative", title: "MB/s" },
  },
});

void test("a chart renders to standalone SVG without the canvas package", async () => {
  assert.throws(() => createRequire(import.meta.url).resolve("canvas"));
  const svg = await renderSvg(line(false), "t");
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  for (const label of ["16 KiB", "64 KiB", "256 KiB", "1 MiB"])
    assert.ok(svg.includes(`>${label}<`), label);
  assert.ok(!/NaN|undefined/.test(svg));
});

void test("every id and reference carries the chart's prefix", async () => {
  const svg = await renderSvg(line(true), "sweep-base64");
  const ids = [...svg.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(ids.length > 0, "a clipped mark has a clip path");
  for (const id of ids) assert.ok(id.startsWith("sweep-base64-"), id);
  for (const m of svg.matchAll(/url\(#([^)]+)\)/g)) assert.ok(ids.includes(m[1]!), m[1]);
  assert.equal(
    scopeIds('<a id="c1" href="#c1" fill="url(#c1)"/>', "p"),
    '<a id="p-c1" href="#p-c1" fill="url(#p-c1)"/>',
  );
});

void test("a specification Vega warns about is refused", async () => {
  const bad: ChartSpec = {
    ...line(false),
    encoding: { x: { field: "x", type: "quantitative" }, wobble: { field: "y" } },
  };
  await assert.rejects(renderSvg(bad, "bad"), /Vega reported warning/);
});
