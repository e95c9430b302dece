/**
 * The doors between rooms: roles import protocol/, never each other, and protocol/ imports no
 * role and does no I/O. (eslint enforces the same in `npm run check`; this test keeps it in
 * `npm test` too, and checks dynamic imports and re-exports that a lint pattern could miss.)
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { test } from "node:test";

const root = resolve(import.meta.dirname, "../..");
const roles = ["server", "computer", "agent"] as const;
const IMPORT =
  /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2])!);
}

/** The top-level room a relative import lands in, or null for packages. */
function roomOf(file: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  const target = relative(root, resolve(dirname(file), spec));
  return target.split("/")[0] ?? null;
}

void test("roles never import each other", () => {
  const violations: string[] = [];
  for (const role of roles) {
    for (const file of tsFiles(join(root, role))) {
      for (const spec of importsOf(file)) {
        const room = roomOf(file, spec);
        if (room && room !== role && (roles as readonly string[]).includes(room)) {
          violations.push(`${relative(root, file)} imports ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});

void test("protocol/ imports no role and no I/O module", () => {
  const io = /^(node:)?(fs|fs\/promises|net|http|https|child_process|dgram|worker_threads)$/;
  const violations: string[] = [];
  for (const file of tsFiles(join(root, "protocol"))) {
    for (const spec of importsOf(file)) {
      const room = roomOf(file, spec);
      if ((room && room !== "protocol") || io.test(spec)) {
        violations.push(`${relative(root, file)} imports ${spec}`);
      }
    }
  }
  assert.deepEqual(violations, []);
});

void test("the door check sees a violation when there is one", () => {
  // Guard against a regex that matches nothing: a synthetic file text must be caught.
  const text =
    'import { x } from "../agent/client.ts";\nconst m = await import("../computer/a.ts");';
  const specs = [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2]);
  assert.deepEqual(specs, ["../agent/client.ts", "../computer/a.ts"]);
});
