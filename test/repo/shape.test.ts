// @pure
/**
 * The shape of the product packages (agent/, server/, computer/, protocol/; their tests and
 * builds aside): no source file over 600 lines, and within each package imports point one way
 * only. The layers are what the import graph makes them: a file sits above every file it
 * imports, so an import that closes a cycle (two files that import each other, directly or
 * around a ring) is an arrow pointing back up, and the test names the ring. Type-only imports
 * count: a lower file that needs an upper file's types depends on it all the same. The length
 * of the functions a pull runs is checked on its trace (test/repo/get-blob-files.test.ts).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

const root = resolve(import.meta.dirname, "../..");
const PACKAGES = ["agent", "server", "computer", "protocol"];
/** The most lines of a product source file (the developers' guide). */
const MOST_LINES = 600;
const IMPORT =
  /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^import\s*["']([^"']+)["']/gm;

/** The package's sources, relative to the repository (no dist, tests or node_modules). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    if (["dist", "node_modules", "test"].includes(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (path.endsWith(".ts") && !path.endsWith(".test.ts")) out.push(relative(root, path));
  }
  return out;
}

/** The package files `file` imports (relative specifiers; packages are other rooms). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  return [...text.matchAll(IMPORT)]
    .map((m) => (m[1] ?? m[2] ?? m[3])!)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => relative(root, resolve(dirname(join(root, file)), spec)));
}

/** The rings of the graph: its strongly connected components of more than one file (Tarjan). */
function rings(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const ring: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      ring.push(w);
      if (w === v) break;
    }
    if (ring.length > 1) found.push(ring.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

void test(`no product source file is over ${MOST_LINES} lines`, () => {
  const long = PACKAGES.flatMap((pkg) => sources(join(root, pkg)))
    .map((file) => ({ file, lines: readFileSync(join(root, file), "utf8").split("\n").length }))
    .filter((f) => f.lines > MOST_LINES)
    .map((f) => `${f.file}: ${f.lines} lines`);
  assert.deepEqual(long, []);
});

void test("within each product package, imports point one way: no file imports one that imports it", () => {
  for (const pkg of PACKAGES) {
    const files = sources(join(root, pkg));
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    // Every relative import lands on a source of the package (else the graph would miss edges).
    for (const [file, deps] of graph) {
      for (const dep of deps) assert.ok(graph.has(dep), `${file} imports ${dep}, not a source`);
    }
    assert.deepEqual(rings(graph), [], `${pkg}: files that import each other (a back-arrow)`);
  }
});

void test("the ring finder finds a ring, and no ring in a layered graph", () => {
  const layered = new Map([
    ["a", ["b", "c"]],
    ["b", ["c"]],
    ["c", []],
  ]);
  assert.deepEqual(rings(layered), []);
  const back = new Map([...layered, ["c", ["a"]]]);
  assert.deepEqual(rings(back), [["a", "b", "c"]]);
});
