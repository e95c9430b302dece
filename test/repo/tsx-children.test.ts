// @pure
/**
 * Every process or thread that runs our TypeScript through tsx also passes
 * `--conditions=@a2c-smcp/source`, so `@a2c-smcp/protocol` resolves to protocol/index.ts. A
 * child without it would load protocol/dist/ instead: missing before a build, stale after one.
 * (The test runner compiles the test files with the same condition: scripts/run-tests.ts.)
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { test } from "node:test";

const root = resolve(import.meta.dirname, "../..");
const CONDITION = "--conditions=@a2c-smcp/source";
/** The tsx loader argument: `"--import", "tsx"` in code, `--import tsx` in a command line. */
const TSX = /"--import",\s*"tsx"|--import[ =]tsx\b/g;
/** How far before the tsx argument the condition may stand (same argument list). */
const REACH = 120;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry === "dist" || entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else if (/\.(ts|mjs|js)$/.test(path)) out.push(path);
  }
  return out;
}

/** `file:line` of every tsx argument without the condition shortly before it. */
export function unconditioned(name: string, text: string): string[] {
  const misses: string[] = [];
  for (const m of text.matchAll(TSX)) {
    if (!text.slice(Math.max(0, m.index - REACH), m.index).includes(CONDITION)) {
      misses.push(`${name}:${text.slice(0, m.index).split("\n").length}`);
    }
  }
  return misses;
}

void test("every tsx child and worker gets the source condition", () => {
  const self = resolve(import.meta.filename);
  const sources = ["agent", "server", "computer", "protocol", "bench", "scripts", "test"]
    .flatMap((d) => files(join(root, d)))
    .filter((f) => f !== self);
  const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const misses = [
    ...sources.flatMap((f) => unconditioned(relative(root, f), readFileSync(f, "utf8"))),
    ...Object.entries(scripts).flatMap(([name, line]) => unconditioned(`npm run ${name}`, line)),
    ...["Dockerfile", "docker-compose.yml"].flatMap((f) =>
      unconditioned(f, readFileSync(join(root, f), "utf8")),
    ),
  ];
  assert.deepEqual(misses, []);
});

void test("the check sees a tsx child without the condition", () => {
  assert.deepEqual(unconditioned("a.ts", 'spawn(node, ["--import", "tsx", "x.ts"])'), ["a.ts:1"]);
  assert.deepEqual(unconditioned("b.json", '"x": "node --import tsx x.ts"'), ["b.json:1"]);
  assert.deepEqual(unconditioned("c.ts", `spawn(node, ["${CONDITION}", "--import", "tsx"])`), []);
});
