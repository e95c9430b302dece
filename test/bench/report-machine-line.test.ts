// @pure
// The report's machine line says how the kernel hands out transparent huge pages and whether the
// bench's processes asked glibc for them: the in-memory reads of the user view move by almost 2x
// with them (docs/results.md, "Retired goals"), so a report must say which side of that it
// measured.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildBlocks } from "../../bench/report/build.ts";
import type { Report } from "../../bench/report/types.ts";
import { fixtureReport } from "./fixture-report.ts";

async function machineLine(meta: Partial<Report["meta"]>): Promise<string> {
  const report = await fixtureReport();
  Object.assign(report.meta, meta);
  const line = buildBlocks(report).find((b) => b.kind === "para" && b.text.startsWith("Full run"));
  assert.ok(line && line.kind === "para", "the report has its machine line");
  return line.text;
}

void test("madvise mode, no process asking: said so", async () => {
  const text = await machineLine({ hugePages: "madvise", mallocTunables: null });
  assert.match(text, /transparent huge pages: madvise, asked for by no bench process;/);
});

void test("madvise mode, glibc.malloc.hugetlb=1 in the tunables: said so", async () => {
  const text = await machineLine({
    hugePages: "madvise",
    mallocTunables: "glibc.malloc.mmap_threshold=33554432:glibc.malloc.hugetlb=1",
  });
  assert.match(text, /transparent huge pages: madvise, asked for by every bench process/);
});

void test("always, never, or a kernel that does not say", async () => {
  assert.match(await machineLine({ hugePages: "always" }), /transparent huge pages: always;/);
  assert.match(await machineLine({ hugePages: "never" }), /transparent huge pages: never;/);
  assert.match(await machineLine({ hugePages: null }), /transparent huge pages: not reported;/);
});
