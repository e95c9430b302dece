// @pure
/**
 * The doors between rooms: roles import the protocol as `@a2c-smcp/protocol`, never each other,
 * and protocol/ imports no role and does no I/O; each package's sources import exactly the
 * packages its package.json lists as dependencies; scripts/ never imports bench/. (eslint enforces the role doors in
 * `npm run check`; this test keeps them in `npm test` too, and checks dynamic imports and
 * re-exports that a lint pattern could miss.)
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative, resolve, dirname } from "node:path";
import { test } from "node:test";

const root = resolve(import.meta.dirname, "../..");
const roles = ["server", "computer", "agent"] as const;
const packages = ["protocol", ...roles] as const;
const IMPORT =
  /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^import\s*["']([^"']+)["']/gm;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "dist" || entry === "node_modules") continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

function specsIn(text: string): string[] {
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

function importsOf(file: string): string[] {
  return specsIn(readFileSync(file, "utf8"));
}

/** The top-level room a relative import lands in, or null for packages. */
function roomOf(file: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  const target = relative(root, resolve(dirname(file), spec));
  return target.split("/")[0] ?? null;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; null for relative and built-ins. */
function packageOf(spec: string): string | null {
  if (spec.startsWith(".") || spec.startsWith("node:") || builtinModules.includes(spec)) {
    return null;
  }
  const parts = spec.split("/");
  return spec.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function manifest(dir: string): { name: string; dependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as {
    name: string;
    dependencies?: Record<string, string>;
  };
}

void test("roles never import each other, by path or by package name", () => {
  const violations: string[] = [];
  for (const role of roles) {
    for (const file of tsFiles(join(root, role))) {
      for (const spec of importsOf(file)) {
        const room = roomOf(file, spec) ?? /^@a2c-smcp\/([^/]+)/.exec(spec)?.[1];
        if (room && room !== role && (roles as readonly string[]).includes(room)) {
          violations.push(`${relative(root, file)} imports ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});

void test("roles reach the protocol through @a2c-smcp/protocol, never by a path out of their folder", () => {
  const violations: string[] = [];
  for (const role of roles) {
    for (const file of tsFiles(join(root, role))) {
      for (const spec of importsOf(file)) {
        const room = roomOf(file, spec);
        if (room !== null && room !== role)
          violations.push(`${relative(root, file)} imports ${spec}`);
        if (spec.startsWith("@a2c-smcp/protocol/")) {
          violations.push(
            `${relative(root, file)} imports ${spec} (only the package root is exported)`,
          );
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
      if ((room && room !== "protocol") || io.test(spec) || spec.startsWith("@a2c-smcp/")) {
        violations.push(`${relative(root, file)} imports ${spec}`);
      }
    }
  }
  assert.deepEqual(violations, []);
});

void test("each package's sources import exactly the packages it lists as dependencies", () => {
  for (const dir of packages) {
    const imported = new Set<string>();
    for (const file of tsFiles(join(root, dir))) {
      for (const spec of importsOf(file)) {
        const pkg = packageOf(spec);
        if (pkg) imported.add(pkg);
      }
    }
    const { name, dependencies = {} } = manifest(dir);
    assert.deepEqual(
      [...imported].sort(),
      Object.keys(dependencies).sort(),
      `${name}: imports (left) and dependencies (right) differ`,
    );
  }
});

void test("scripts/ imports nothing from bench/ (the bench runs on the scripts, not the reverse)", () => {
  const back = tsFiles(join(root, "scripts")).flatMap((file) =>
    importsOf(file)
      .filter((spec) => roomOf(file, spec) === "bench")
      .map((spec) => `${relative(root, file)} → ${spec}`),
  );
  assert.deepEqual(back, []);
});

void test("the door check sees a violation when there is one", () => {
  // Guard against a regex that matches nothing: a synthetic file text must be caught.
  const text =
    'import { x } from "../agent/client.ts";\nconst m = await import("../computer/a.ts");\nimport "yaml";';
  assert.deepEqual(specsIn(text), ["../agent/client.ts", "../computer/a.ts", "yaml"]);
  assert.equal(packageOf("@modelcontextprotocol/sdk/client/index.js"), "@modelcontextprotocol/sdk");
  assert.equal(packageOf("node:fs"), null);
});
