// @pure
// Hard links (computer/skills/sandbox.ts): a hard link is the same file under another name, so no
// path check can tell a file linked in from outside the package, or a `.skillenv` linked under an
// innocent name. A regular file with more than one link is refused as `forbidden` (4017 at mint
// time, 4018 at pull time, also when the link appears after the handle was minted), unless the
// operator allows hard links; even then, one that is a `.skillenv` of its own package stays
// forbidden.
import assert from "node:assert/strict";
import { link, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import { GetSkillRetSchema, skillResourceNotAccessible } from "../../../protocol/index.ts";
import {
  callGetSkill,
  callGetSkills,
  skillMd,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

const rigs: SkillRig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.close()));
});

/** A package `user/demo` with an outside file hard-linked in and a `.skillenv` linked as notes. */
async function rig(allowHardLinks: boolean): Promise<{ rig: SkillRig; root: string }> {
  let root = "";
  const r = await startSkillRig(
    async (home) => {
      root = await writePackage(home, "user/demo", skillMd("demo", "body"), {
        "plain.txt": "plain",
        ".skillenv": "SECRET=SKILLENV-SECRET",
        "sub/inner.txt": "inner",
      });
      await writeFileDeep(join(home, "..", "outside.txt"), "OUTSIDE-SECRET");
      await link(join(home, "..", "outside.txt"), join(root, "linked-in.txt"));
      await link(join(root, ".skillenv"), join(root, "sub", "notes.txt"));
    },
    { config: { allowHardLinks } },
  );
  rigs.push(r);
  return { rig: r, root };
}

const forbidden = (rel: string) => skillResourceNotAccessible("forbidden", rel);

void test("by default a multiply-linked file is forbidden, whatever it links to", async () => {
  const { rig: r } = await rig(false);
  assert.deepEqual(
    await callGetSkill(r.service, "demo", "linked-in.txt"),
    forbidden("linked-in.txt"),
  );
  assert.deepEqual(
    await callGetSkill(r.service, "demo", "sub/notes.txt"),
    forbidden("sub/notes.txt"),
  );
  const plain = GetSkillRetSchema.parse(await callGetSkill(r.service, "demo", "plain.txt"));
  assert.equal(plain.body, "plain");
});

void test("a hard link made after minting: the pull is 4018 forbidden, no byte served", async () => {
  const { rig: r, root } = await rig(false);
  await writeFile(join(root, "big.txt"), "B".repeat(64 * 1024)); // over the inline budget
  const minted = GetSkillRetSchema.parse(await callGetSkill(r.service, "demo", "big.txt"));
  assert.ok(minted.blob_handle);
  await link(join(root, "big.txt"), join(root, "..", "big-elsewhere.txt"));
  const ret = await r.engine.getBlob({
    agent: "a",
    req_id: "r1",
    computer: "pc-test",
    blob_handle: minted.blob_handle,
  });
  assert.deepEqual(ret, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "forbidden" },
  });
});

void test("a hard-linked SKILL.md leaves its skill out of the registry", async () => {
  const r = await startSkillRig(async (home) => {
    const root = await writePackage(home, "user/linked", skillMd("linked", "x"));
    await link(join(root, "SKILL.md"), join(home, "..", "SKILL.md.copy"));
    await writePackage(home, "user/single", skillMd("single", "y"));
  });
  rigs.push(r);
  const names = ((await callGetSkills(r.service)) as { skills: { name: string }[] }).skills.map(
    (s) => s.name,
  );
  assert.deepEqual(names, ["single"]);
});

void test("allowed by the operator: served, except a .skillenv under another name", async () => {
  const { rig: r } = await rig(true);
  const linked = GetSkillRetSchema.parse(await callGetSkill(r.service, "demo", "linked-in.txt"));
  assert.equal(linked.body, "OUTSIDE-SECRET", "the operator chose to serve linked files");
  assert.deepEqual(
    await callGetSkill(r.service, "demo", "sub/notes.txt"),
    forbidden("sub/notes.txt"),
  );
});
