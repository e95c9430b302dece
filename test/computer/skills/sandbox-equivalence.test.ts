// The sandbox's component walk (computer/skills/sandbox.ts) answers exactly what the plain
// realpath(3) algorithm answers — realpath(root), "root is a directory", realpath(root/rel),
// containment, forbidden segment, regular file — on a package full of traps, for a fixed corpus
// and for generated rel_paths, with the root present, missing, a file, and behind a symlink.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { realpathSync, statSync } from "node:fs";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { after, before, test } from "node:test";
import fc from "fast-check";
import {
  lexRelPath,
  resolveInPackage,
  type SandboxResult,
} from "../../../computer/skills/sandbox.ts";
import { tempDir, writeFileDeep } from "../../support/skills-fixtures.ts";

const MISSING = new Set(["ENOENT", "ENOTDIR", "ENAMETOOLONG", "ELOOP", "EACCES", "EPERM"]);
const missing = (err: unknown): boolean => MISSING.has((err as NodeJS.ErrnoException).code ?? "");

/** The algorithm as the sandbox ran it before the walk: two realpath(3) calls and two stats. */
function reference(root: string, raw: string | undefined): SandboxResult {
  const lexed = lexRelPath(raw);
  if (!lexed.ok) return lexed;
  let rootReal: string;
  try {
    rootReal = realpathSync.native(root);
    if (!statSync(rootReal).isDirectory()) return { ok: false, reason: "root_gone" };
  } catch (err) {
    if (missing(err)) return { ok: false, reason: "root_gone" };
    throw err;
  }
  if (lexed.directory) return { ok: false, reason: "not_found" };
  let target: string;
  try {
    target = realpathSync.native(rootReal + sep + lexed.relPath);
  } catch (err) {
    if (missing(err)) return { ok: false, reason: "not_found" };
    throw err;
  }
  const inside = relative(rootReal, target);
  if (inside === "" || inside === ".." || inside.startsWith(".." + sep) || inside.startsWith(sep))
    return { ok: false, reason: inside === "" ? "not_found" : "traversal" };
  if (inside.split(sep).some((s) => s.toLowerCase() === ".skillenv"))
    return { ok: false, reason: "forbidden" };
  try {
    if (!statSync(target).isFile()) return { ok: false, reason: "not_found" };
  } catch (err) {
    if (missing(err)) return { ok: false, reason: "not_found" };
    throw err;
  }
  return { ok: true, relPath: lexed.relPath, target };
}

let base: { dir: string; cleanup(): Promise<void> };
let root = "";
const roots: Record<string, string> = {};

before(async () => {
  base = await tempDir("a2c-sandbox-eq-");
  const tmp = base.dir;
  root = join(tmp, "home", "user", "pkg");
  await writeFileDeep(join(tmp, "outside", "secret.txt"), "OUTSIDE");
  await writeFileDeep(join(root, "SKILL.md"), "---\nname: pkg\ndescription: d\n---\nbody\n");
  for (const f of ["a.txt", ".skillenv", "sub/.skillenv", "sub/b.txt", "sub/deep/c.txt", "d/e"]) {
    await writeFileDeep(join(root, f), f);
  }
  await mkdir(join(root, "emptydir"));
  await symlink("../../../outside/secret.txt", join(root, "out"));
  await symlink("../../../outside", join(root, "outdir"));
  await symlink("sub", join(root, "s"));
  await symlink("..", join(root, "sub", "up"));
  await symlink("b.txt", join(root, "sub", "b-link"));
  await symlink(".skillenv", join(root, "env"));
  await symlink("s/deep", join(root, "chain"));
  await symlink("nowhere", join(root, "dangling"));
  await symlink("loop", join(root, "loop"));
  await symlink(".", join(root, "self"));
  await symlink(join(root, "a.txt"), join(root, "abs-in"));
  await symlink("/dev/null", join(root, "devnull"));
  execFileSync("mkfifo", [join(root, "fifo")]);
  roots.plain = root;
  roots.missing = join(tmp, "home", "user", "gone");
  roots.file = join(root, "a.txt");
  roots.linked = join(tmp, "home", "user", "linked");
  await symlink(root, roots.linked);
  roots.linkedToFile = join(tmp, "home", "user", "to-file");
  await symlink(join(root, "a.txt"), roots.linkedToFile);
  await writeFile(join(tmp, "home", "user", "plainfile"), "x");
});
after(() => base.cleanup());

const CORPUS = [
  undefined,
  "",
  ".",
  "./",
  "SKILL.md",
  "a.txt",
  "a.txt/",
  "a.txt/x",
  "sub",
  "sub/",
  "sub/b.txt",
  "sub//b.txt",
  "./sub/./b.txt",
  "sub/deep/c.txt",
  "sub/b-link",
  "sub/up/a.txt",
  "sub/up/.skillenv",
  "sub/.skillenv",
  "s/b.txt",
  "s/up/sub/b.txt",
  "chain/c.txt",
  "out",
  "outdir/secret.txt",
  "env",
  "dangling",
  "loop",
  "self/a.txt",
  "self/self/sub/b.txt",
  "abs-in",
  "devnull",
  "fifo",
  "emptydir",
  "emptydir/x",
  "d/e",
  "d/e/f",
  "nope",
  "nope/a.txt",
  "../pkg/a.txt",
  "%2e%2e",
  "x".repeat(300),
  `${"sub/".repeat(40)}b.txt`,
];

void test("the walk and realpath(3) agree on every corpus path under every kind of root", async () => {
  for (const [kind, r] of Object.entries(roots)) {
    for (const rel of CORPUS) {
      assert.deepEqual(await resolveInPackage(r, rel), reference(r, rel), `${kind}: ${rel}`);
    }
  }
});

const FRAGMENTS = [
  "a.txt",
  "sub",
  "s",
  "b.txt",
  "b-link",
  "deep",
  "c.txt",
  "up",
  "chain",
  "out",
  "outdir",
  "secret.txt",
  "env",
  ".skillenv",
  "self",
  "dangling",
  "fifo",
  "emptydir",
  "d",
  "e",
  ".",
  "",
  "..",
];

void test("the walk and realpath(3) agree on generated rel_paths", async () => {
  let served = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 6 }),
      async (parts) => {
        const rel = parts.join("/");
        const walked = await resolveInPackage(root, rel);
        if (walked.ok) served++;
        assert.deepEqual(walked, reference(root, rel), rel);
      },
    ),
    { numRuns: 2000, seed: 11 },
  );
  assert.ok(served >= 30, `only ${served} generated paths were servable`);
});

void test("a root deleted after the registry saw it is root_gone on both", async () => {
  const dir = join(base.dir, "home", "user", "short-lived");
  await writeFileDeep(join(dir, "f.txt"), "f");
  assert.deepEqual(await resolveInPackage(dir, "f.txt"), reference(dir, "f.txt"));
  await rm(dir, { recursive: true });
  const r = await resolveInPackage(dir, "f.txt");
  assert.deepEqual(r, { ok: false, reason: "root_gone" });
  assert.deepEqual(r, reference(dir, "f.txt"));
});
