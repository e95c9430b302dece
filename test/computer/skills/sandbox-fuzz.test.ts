// @pure
// Property test of the sandbox on a real package full of traps: for rel_paths built from hostile
// fragments, get_skill either refuses with 4017 or serves a file that really is inside the
// package and is not .skillenv; the producer agrees; and no answer carries an outside secret.
import assert from "node:assert/strict";
import { realpath, symlink } from "node:fs/promises";
import { join, sep } from "node:path";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { resolveInPackage } from "../../../computer/skills/sandbox.ts";
import { isErrorPayload } from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

let rig: SkillRig;
let root = "";
let rootReal = "";
before(async () => {
  rig = await startSkillRig(async (home) => {
    await writeFileDeep(join(home, "..", "outside", "secret.txt"), "OUTSIDE-SECRET");
    root = await writePackage(home, "user/trap", skillMd("trap", "trap body"), {
      ".skillenv": "SKILLENV-SECRET",
      "sub/.skillenv": "SKILLENV-SECRET",
      "sub/a.txt": "a",
      "b.md": "b",
    });
    await symlink("../../../outside", join(root, "out"));
    await symlink(".skillenv", join(root, "env"));
    await symlink("sub", join(root, "s"));
    await symlink("..", join(root, "sub", "up"));
  });
  rootReal = await realpath(root);
});
after(() => rig.close());

const BENIGN = ["sub", "s", "a.txt", "b.md", "SKILL.md", ".", ""];
const HOSTILE = [
  "..",
  "out",
  "env",
  "up",
  ".skillenv",
  ".SKILLENV",
  "secret.txt",
  "%2e%2e",
  "%2f",
  "\\",
  ":",
  "\0",
  "C:",
  "\uff0e\uff0e",
  "~",
  "$HOME",
];
const fragment = fc.oneof(
  { arbitrary: fc.constantFrom(...BENIGN), weight: 3 },
  { arbitrary: fc.constantFrom(...HOSTILE), weight: 2 },
);
const relPath = fc
  .tuple(
    fc.nat(9),
    fc.array(fragment, { minLength: 1, maxLength: 5 }),
    fc.constantFrom("/", "/", "/", "\\", "//"),
  )
  .map(([abs, parts, joiner]) => (abs === 0 ? "/" : "") + parts.join(joiner));

void test("fuzz: every served path is a regular file inside the package and never .skillenv", async () => {
  let served = 0;
  await fc.assert(
    fc.asyncProperty(relPath, async (rel) => {
      const r = await resolveInPackage(root, rel);
      if (r.ok) {
        served++;
        assert.ok(r.target.startsWith(rootReal + sep), `${rel} → ${r.target}`);
        assert.ok(!r.target.toLowerCase().split(sep).includes(".skillenv"), rel);
      }
      const ret = await callGetSkill(rig.service, "trap", rel);
      const text = JSON.stringify(ret);
      assert.ok(!text.includes("SECRET"), `${rel} leaked`);
      assert.equal(isErrorPayload(ret), !r.ok, rel);
      if (isErrorPayload(ret)) assert.equal(ret.code, 4017, rel);
      const pulled = await rig.service.producers[0]!.resolve({ n: "trap", p: rel });
      if (rel !== "") assert.equal(pulled?.ok, r.ok, rel);
    }),
    { numRuns: 400, seed: 5 },
  );
  assert.ok(
    served >= 10,
    `only ${served} generated paths were servable: the corpus is too hostile`,
  );
});
