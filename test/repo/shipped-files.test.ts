/**
 * What the packages ship holds no test hook and no demo: every file `npm pack` would put in each
 * tarball is read, and none may branch on a test runner (`NODE_TEST_CONTEXT`, `NODE_ENV` set to
 * `test`, another runner's marker), read a variable of the test suite (`A2C_TEST_*`) or import
 * `node:test`; none may be the demo MCP server or its content (the repo's `scripts/demo/`). Tests
 * observe the roles through their metrics and public seams instead.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { REPO_ROOT } from "../../scripts/launch/roles.ts";

interface PackEntry {
  name: string;
  files: { path: string }[];
}

const HOOKS: [RegExp, string][] = [
  [/NODE_TEST_CONTEXT/, "reads NODE_TEST_CONTEXT"],
  [/NODE_ENV\W{1,12}test\b|\btest\W{1,12}NODE_ENV/, 'compares NODE_ENV with "test"'],
  [/\bA2C_TEST_\w+/, "reads a variable of the test suite (A2C_TEST_*)"],
  [/["']node:test["']/, "imports node:test"],
  [/\b(?:JEST_WORKER_ID|VITEST|__TEST__)\b/, "looks for a test runner"],
];

/** Why `text` carries a test hook, one reason per kind found. */
export function hooksIn(text: string): string[] {
  return HOOKS.filter(([re]) => re.test(text)).map(([, why]) => why);
}

/** `{folder → shipped paths}` of every workspace package, as `npm pack` lists them. */
async function shipped(): Promise<Map<string, string[]>> {
  const { stdout } = await promisify(execFile)(
    "npm",
    ["pack", "--workspaces", "--dry-run", "--json", "--ignore-scripts"],
    { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  const rootPkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    workspaces: string[];
  };
  const folderOf = new Map(
    rootPkg.workspaces.map((folder) => {
      const pkg = JSON.parse(readFileSync(join(REPO_ROOT, folder, "package.json"), "utf8")) as {
        name: string;
      };
      return [pkg.name, folder] as const;
    }),
  );
  const out = new Map<string, string[]>();
  for (const entry of JSON.parse(stdout) as PackEntry[]) {
    const folder = folderOf.get(entry.name);
    assert.ok(folder, `npm pack listed ${entry.name}, which is no workspace`);
    out.set(
      folder,
      entry.files.map((f) => join(folder, f.path)),
    );
  }
  return out;
}

void test("no shipped file carries a test hook or the demo", async () => {
  const packages = await shipped();
  assert.deepEqual([...packages.keys()].sort(), ["agent", "computer", "protocol", "server"]);
  const problems: string[] = [];
  for (const [folder, files] of packages) {
    const code = files.filter((f) => f.endsWith(".js"));
    assert.ok(
      code.length > 0 && code.every((f) => existsSync(join(REPO_ROOT, f))),
      `${folder}: dist/ is built (npm test builds it; alone: npm run build)`,
    );
    for (const file of files) {
      if (/demo/i.test(file)) problems.push(`${file}: demo content`);
      if (!/\.(?:[cm]?js|d\.ts|json)$/.test(file)) continue;
      for (const why of hooksIn(readFileSync(join(REPO_ROOT, file), "utf8"))) {
        problems.push(`${file}: ${why}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

void test("the check sees each kind of hook", () => {
  assert.deepEqual(hooksIn('const quiet = process.env.NODE_TEST_CONTEXT ? "silent" : "info";'), [
    "reads NODE_TEST_CONTEXT",
  ]);
  assert.deepEqual(hooksIn('if (process.env.NODE_ENV === "test") counters.push(x);'), [
    'compares NODE_ENV with "test"',
  ]);
  assert.deepEqual(hooksIn("const stock = process.env.A2C_TEST_SERVER_TRANSPORT;"), [
    "reads a variable of the test suite (A2C_TEST_*)",
  ]);
  assert.deepEqual(hooksIn('import { mock } from "node:test";'), ["imports node:test"]);
  assert.deepEqual(hooksIn("if (process.env.JEST_WORKER_ID) return;"), ["looks for a test runner"]);
  assert.deepEqual(hooksIn('process.env.NODE_ENV = "production"; const tests = 3;'), []);
});
