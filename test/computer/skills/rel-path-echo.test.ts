// @pure
// A 4017 echoes a relative rel_path in details.rel_path (diagnostic, protocol.md §7.6) but leaves out an
// absolute one (POSIX or Windows): details.rel_path is optional, and an error must never carry
// something that reads like a real path (D23).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

let rig: SkillRig;
before(async () => {
  rig = await startSkillRig(async (home) => {
    await writePackage(home, "user/echo", skillMd("echo", "b"));
  });
});
after(() => rig.close());

void test("absolute rel_path: 4017 traversal without details.rel_path", async () => {
  for (const rel of ["/etc/passwd", "//etc/passwd", "/", "\\\\server\\share\\x", "C:\\x", "C:/x"]) {
    assert.deepEqual(
      await callGetSkill(rig.service, "echo", rel),
      { code: 4017, message: "Skill resource not accessible", details: { reason: "traversal" } },
      rel,
    );
  }
});

void test("relative rel_path: echoed as sent", async () => {
  for (const [rel, reason] of [
    ["../../etc/passwd", "traversal"],
    ["missing.txt", "not_found"],
    [".skillenv", "forbidden"],
  ]) {
    assert.deepEqual(await callGetSkill(rig.service, "echo", rel), {
      code: 4017,
      message: "Skill resource not accessible",
      details: { reason, rel_path: rel },
    });
  }
});
