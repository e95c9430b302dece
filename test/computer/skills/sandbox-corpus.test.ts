// The sandbox's 4017 reasons (the `out-link` / `abs-out` entries among them) and the hostile rel_path corpus: every value gets the right 4017
// reason, the same request through the pull-time producer never resolves, and no answer carries a
// byte from outside the package (or from .skillenv).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join, posix, win32 } from "node:path";
import { after, before, test } from "node:test";
import { GetSkillRetSchema, isErrorPayload } from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

const SECRETS = ["OUTSIDE-SECRET", "SKILLENV-SECRET", "NEIGHBOUR-SECRET", "OTHER-PKG-BODY"];

let rig: SkillRig;
let outside = "";
before(async () => {
  rig = await startSkillRig(async (home) => {
    const tmp = join(home, "..");
    outside = join(tmp, "outside");
    await writeFileDeep(join(outside, "secret.txt"), "OUTSIDE-SECRET");
    const root = await writePackage(home, "user/victim", skillMd("victim", "victim body\n"), {
      "notes.txt": "notes\n",
      ".skillenv": "API_KEY=SKILLENV-SECRET",
      "sub/.skillenv": "TOKEN=SKILLENV-SECRET",
      "sub/file.txt": "in sub\n",
      "scripts/run.sh": "echo hi\n",
      ".hidden.txt": "hidden but not forbidden\n",
      "%2e%2e": "literal-percent\n",
    });
    await writePackage(home, "user/other", skillMd("other", "OTHER-PKG-BODY\n"));
    await writePackage(home, "user/clean", skillMd("clean", "clean\n")); // no .skillenv at all
    await symlink(join(outside, "secret.txt"), join(root, "abs-out"));
    await symlink("../../../outside/secret.txt", join(root, "out-link"));
    await symlink("../../../outside", join(root, "out-dir"));
    await symlink("../other/SKILL.md", join(root, "other-pkg"));
    await symlink(".skillenv", join(root, "env-link"));
    await symlink("sub/.skillenv", join(root, "sub-env-link"));
    await symlink("sub", join(root, "dir-link"));
    await symlink("../../../../outside/secret.txt", join(root, "sub", "up-link"));
    await symlink("loop", join(root, "loop"));
    await symlink("nowhere", join(root, "dangling"));
    await symlink(".", join(root, "root-link"));
    await symlink(join(root, "notes.txt"), join(root, "abs-in")); // absolute but inside: fine
    await symlink("/dev/null", join(root, "dev-null-link"));
    await symlink("/proc/self/environ", join(root, "proc-link"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    // A symlinked package root: the sandbox works on its realpath.
    const real = join(tmp, "real", "linked");
    await writePackage(join(tmp, "real"), "linked", skillMd("linked", "linked body\n"));
    await writeFile(join(tmp, "real", "neighbour.txt"), "NEIGHBOUR-SECRET");
    await symlink("../neighbour.txt", join(real, "up"));
    await symlink(join(root, "notes.txt"), join(real, "home-escape"));
    await symlink(real, join(home, "user", "linked"));
  });
});
after(() => rig.close());

const long = (n: number) => "a".repeat(n);
const CORPUS: Array<[string, "traversal" | "forbidden" | "not_found"]> = [
  // `..` in every position, absolute paths, backslashes, `:`, NUL.
  ["../../etc/passwd", "traversal"],
  ["/etc/passwd", "traversal"],
  ["..", "traversal"],
  ["../", "traversal"],
  ["../victim/SKILL.md", "traversal"],
  ["sub/../SKILL.md", "traversal"],
  ["sub/../../other/SKILL.md", "traversal"],
  ["sub/..", "traversal"],
  ["./../SKILL.md", "traversal"],
  ["scripts/../", "traversal"],
  ["a/b/c/../../../../x", "traversal"],
  ["../.skillenv", "traversal"],
  ["//etc/passwd", "traversal"],
  ["/", "traversal"],
  ["..\\..\\etc\\passwd", "traversal"],
  ["sub\\file.txt", "traversal"],
  ["\\\\server\\share\\x", "traversal"],
  ["C:\\Windows\\win.ini", "traversal"],
  ["C:/Windows/win.ini", "traversal"],
  ["file:///etc/passwd", "traversal"],
  ["sub/a:b.txt", "traversal"],
  ["notes.txt:$DATA", "traversal"],
  ["notes.txt\0.png", "traversal"],
  ["\0", "traversal"],
  [`${"a/".repeat(1000)}../x`, "traversal"],
  [`/${long(4000)}`, "traversal"],
  // Symlinks leaving the package root (realpath containment).
  ["abs-out", "traversal"],
  ["out-link", "traversal"],
  ["out-dir/secret.txt", "traversal"],
  ["other-pkg", "traversal"],
  ["sub/up-link", "traversal"],
  ["dir-link/up-link", "traversal"],
  ["dev-null-link", "traversal"],
  ["proc-link", "traversal"],
  // .skillenv in any case, any directory, any spelling, and symlinks to it.
  [".skillenv", "forbidden"],
  [".SKILLENV", "forbidden"],
  [".SkillEnv", "forbidden"],
  ["sub/.skillenv", "forbidden"],
  ["scripts/.skillenv", "forbidden"],
  ["./.skillenv", "forbidden"],
  ["sub//.skillenv", "forbidden"],
  [".skillenv/", "forbidden"],
  [".skillenv/x", "forbidden"],
  ["deep/a/b/.Skillenv", "forbidden"],
  ["dir-link/.skillenv", "forbidden"],
  ["env-link", "forbidden"],
  ["sub-env-link", "forbidden"],
  ["root-link/.skillenv", "forbidden"],
  // Legal spellings of things that are not servable files.
  ["missing.txt", "not_found"],
  ["scripts", "not_found"],
  ["scripts/", "not_found"],
  ["sub/", "not_found"],
  [".", "not_found"],
  ["./", "not_found"],
  ["SKILL.md/", "not_found"],
  ["SKILL.MD", "not_found"],
  ["root-link", "not_found"],
  ["%2e%2e/%2e%2e/etc/passwd", "not_found"],
  ["..%2f..%2fetc%2fpasswd", "not_found"],
  ["%252e%252e/x", "not_found"],
  ["\uff0e\uff0e/\uff0e\uff0e/etc/passwd", "not_found"],
  ["...", "not_found"],
  [" ..", "not_found"],
  ["notes.txt ", "not_found"],
  ["loop", "not_found"],
  ["dangling", "not_found"],
  ["fifo", "not_found"],
  [long(300), "not_found"],
  [Array(20).fill(long(200)).join("/"), "not_found"],
];

void test(`corpus: ${CORPUS.length} hostile rel_path values get the right 4017 reason`, async () => {
  assert.ok(CORPUS.length >= 50);
  for (const [rel, reason] of CORPUS) {
    const ret = await callGetSkill(rig.service, "victim", rel);
    // An absolute rel_path is not echoed (details.rel_path is optional; rel-path-echo.test.ts).
    const absolute = posix.isAbsolute(rel) || win32.isAbsolute(rel);
    assert.deepEqual(
      ret,
      {
        code: 4017,
        message: "Skill resource not accessible",
        details: absolute ? { reason } : { reason, rel_path: rel },
      },
      `rel_path ${JSON.stringify(rel)}`,
    );
  }
});

void test("corpus: the pull-time producer never resolves any of them (traversal/forbidden → forbidden, missing → gone)", async () => {
  const producer = rig.service.producers[0]!;
  for (const [rel, reason] of CORPUS) {
    const r = await producer.resolve({ n: "victim", p: rel });
    assert.deepEqual(
      r,
      { ok: false, reason: reason === "not_found" ? "gone" : "forbidden" },
      `rel_path ${JSON.stringify(rel)}`,
    );
  }
});

void test("corpus: no answer or handle ever carries a byte from outside the package or from .skillenv", async () => {
  for (const [rel] of CORPUS) {
    const text = JSON.stringify(await callGetSkill(rig.service, "victim", rel));
    for (const s of SECRETS) assert.ok(!text.includes(s), `${rel} leaked ${s}`);
    assert.ok(!text.includes(outside), `${rel} leaked a path`);
  }
});

void test("28/29: ../../etc/passwd and /etc/passwd are traversal (exact payload of the spec example)", async () => {
  assert.deepEqual(await callGetSkill(rig.service, "victim", "../../etc/passwd"), {
    code: 4017,
    message: "Skill resource not accessible",
    details: { reason: "traversal", rel_path: "../../etc/passwd" },
  });
  const abs = await callGetSkill(rig.service, "victim", "/etc/passwd");
  assert.ok(isErrorPayload(abs) && abs.details?.reason === "traversal");
});

void test("31: .skillenv is forbidden with an identical payload whether or not it exists", async () => {
  for (const rel of [".skillenv", "sub/.skillenv", ".SKILLENV"]) {
    const exists = await callGetSkill(rig.service, "victim", rel);
    const missing = await callGetSkill(rig.service, "clean", rel);
    assert.deepEqual(exists, missing, rel);
    assert.ok(isErrorPayload(exists) && exists.details?.reason === "forbidden");
  }
});

void test("percent-encoding is literal: a file named %2e%2e is served as itself; hidden files are not forbidden", async () => {
  const lit = GetSkillRetSchema.parse(await callGetSkill(rig.service, "victim", "%2e%2e"));
  assert.equal(lit.mime_type, "application/octet-stream"); // no extension → binary → handle
  assert.equal((await rig.drain(lit.blob_handle!)).bytes.toString(), "literal-percent\n");
  const hidden = GetSkillRetSchema.parse(await callGetSkill(rig.service, "victim", ".hidden.txt"));
  assert.equal(hidden.body, "hidden but not forbidden\n");
});

void test("symlinks that stay inside the root are served (relative dir link, absolute file link)", async () => {
  const viaDir = GetSkillRetSchema.parse(
    await callGetSkill(rig.service, "victim", "dir-link/file.txt"),
  );
  assert.equal(viaDir.body, "in sub\n");
  const absIn = GetSkillRetSchema.parse(await callGetSkill(rig.service, "victim", "abs-in"));
  assert.equal(absIn.mime_type, "application/octet-stream"); // MIME from the requested name
  assert.equal((await rig.drain(absIn.blob_handle!)).bytes.toString(), "notes\n");
});

void test("symlinked package root: served from its realpath, escapes from it are traversal", async () => {
  const ok = GetSkillRetSchema.parse(await callGetSkill(rig.service, "linked"));
  assert.equal(ok.body, "linked body\n");
  for (const rel of ["up", "home-escape", "../victim/.skillenv", "../neighbour.txt"]) {
    const ret = await callGetSkill(rig.service, "linked", rel);
    assert.ok(isErrorPayload(ret) && ret.details?.reason === "traversal", rel);
    assert.ok(!JSON.stringify(ret).includes("NEIGHBOUR-SECRET"));
  }
});

void test("32: a missing file inside the root is not_found", async () => {
  await mkdir(join(rig.home, "user", "victim", "empty-dir"));
  for (const rel of ["missing.txt", "sub/missing.txt", "empty-dir", "empty-dir/x"]) {
    const ret = await callGetSkill(rig.service, "victim", rel);
    assert.ok(isErrorPayload(ret) && ret.details?.reason === "not_found", rel);
  }
});
