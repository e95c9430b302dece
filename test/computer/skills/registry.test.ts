// @pure
// The registry: sources, names, discovery order, optional metadata, orphans (protocol.md §7.1, §7.4), and
// bad packages left out with an ERROR log line (never served).
import assert from "node:assert/strict";
import { mkdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { isErrorPayload, type A2CSkillRef } from "../../../protocol/index.ts";
import {
  callGetSkill,
  callGetSkills,
  captureLogger,
  PINO_ERROR,
  skillMd,
  startSkillRig,
  tempDir,
  testConfig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";
import { createSkillService } from "../../../computer/skills/index.ts";

let rig: SkillRig;
before(async () => {
  rig = await startSkillRig(async (home) => {
    // 0.4.0 `tags`: not a list of strings, so left out.
    await writePackage(home, "user/zeta", skillMd("zeta", "z", ["tags: [1, two]"]));
    await writePackage(
      home,
      "user/alpha",
      skillMd("alpha", "a", ["allowed-tools: Read, Grep Bash(git add:*)", "tags: [pdf, Report]"]),
    );
    await writePackage(
      home,
      "marketplace/acme/tools/lint",
      skillMd("lint", "l", [
        "compatibility: node>=20",
        "metadata:",
        "  owner: qa",
        "  tags: [a, b]",
        "allowed-tools:",
        "  - Read",
        "  - ' Write '",
      ]),
    );
    await writeFileDeep(
      join(home, "marketplace/acme/tools/plugin.json"),
      '{"name":"tools","version":"1.4.2"}',
    );
    await writePackage(home, "marketplace/acme/docs/write", skillMd("write", "w"));
    await writeFileDeep(
      join(home, "marketplace/acme/docs/.claude-plugin/plugin.json"),
      '{"version":"0.9.0"}',
    );
    await writePackage(home, "mcp/Bundle_1/fetch", skillMd("fetch", "f"), {
      ".a2c-source.json": '{"uri":"skill://host/fetch","version":"7","digest":"abc"}',
    });
    await writePackage(home, "mcp/gone-server/old", skillMd("old", "o"));
    await writeFile(join(home, "mcp/gone-server/.orphaned"), "");
    // Bad packages: each is left out with an ERROR line.
    await writePackage(home, "user/Bad_Name", skillMd("Bad_Name", "x"));
    await mkdir(join(home, "user/no-skill-md"), { recursive: true });
    await writePackage(home, "user/no-fm", "# no frontmatter\n");
    await writePackage(home, "user/bad-yaml", "---\nname: bad-yaml\ndescription: [unclosed\n---\n");
    await writePackage(home, "user/no-desc", "---\nname: no-desc\n---\nbody\n");
    await writePackage(home, "user/list-fm", "---\n- a\n- b\n---\n");
    await writePackage(home, "user/mismatch", skillMd("other-name", "x"));
    await writePackage(
      home,
      "user/dup-key",
      "---\nname: dup-key\nname: dup-key\ndescription: d\n---\n",
    );
    await writePackage(home, "marketplace/r1/same/skill", skillMd("skill", "1"));
    await writePackage(home, "marketplace/r2/same/skill", skillMd("skill", "2"));
    await writePackage(home, "mcp/bad.bundle/x", skillMd("x", "x"));
    await writeFileDeep(join(home, "..", "outside-skill.md"), skillMd("escaper", "OUTSIDE"));
    await mkdir(join(home, "user/escaper"));
    await symlink("../../../outside-skill.md", join(home, "user/escaper/SKILL.md"));
    await writeFile(join(home, "user/README.txt"), "not a package");
    await writePackage(home, "user/.hidden-skill", skillMd("hidden-skill", "h"));
  });
});
after(() => rig.close());

async function refs(): Promise<A2CSkillRef[]> {
  const ret = await callGetSkills(rig.service);
  assert.ok(!isErrorPayload(ret));
  return ret.skills;
}

void test("discovery order: user, marketplace, mcp; code-unit order within each level", async () => {
  assert.deepEqual(
    (await refs()).map((r) => r.name),
    ["alpha", "zeta", "docs:write", "tools:lint", "mcp:Bundle_1:fetch"],
  );
});

void test("names, sources, paths and optional fields per source", async () => {
  const byName = new Map((await refs()).map((r) => [r.name, r]));
  assert.deepEqual(byName.get("alpha"), {
    name: "alpha",
    source: "user",
    path: join(rig.home, "user/alpha"),
    description: "The alpha skill",
    allowed_tools: ["Read", "Grep", "Bash(git add:*)"],
    tags: ["pdf", "Report"],
  });
  assert.equal(byName.get("zeta")?.tags, undefined);
  assert.deepEqual(byName.get("tools:lint"), {
    name: "tools:lint",
    source: "marketplace:acme",
    path: join(rig.home, "marketplace/acme/tools/lint"),
    description: "The lint skill",
    compatibility: "node>=20",
    allowed_tools: ["Read", "Write"],
    skill_metadata: { owner: "qa", tags: ["a", "b"] },
    version: "1.4.2",
  });
  assert.equal(byName.get("docs:write")?.version, "0.9.0");
  assert.deepEqual(byName.get("mcp:Bundle_1:fetch"), {
    name: "mcp:Bundle_1:fetch",
    source: "mcp:Bundle_1",
    path: join(rig.home, "mcp/Bundle_1/fetch"),
    description: "The fetch skill",
    uri: "skill://host/fetch",
    version: "7",
  });
});

void test("23: orphaned skills are absent from get_skills, 4014 on get_skill; removing the marker restores them", async () => {
  assert.ok(!(await refs()).some((r) => r.name === "mcp:gone-server:old"));
  assert.deepEqual(await callGetSkill(rig.service, "mcp:gone-server:old"), {
    code: 4014,
    message: "Skill not found",
    details: { name: "mcp:gone-server:old" },
  });
  await rm(join(rig.home, "mcp/gone-server/.orphaned"));
  try {
    assert.ok((await refs()).some((r) => r.name === "mcp:gone-server:old"));
    assert.ok(!isErrorPayload(await callGetSkill(rig.service, "mcp:gone-server:old")));
  } finally {
    await writeFile(join(rig.home, "mcp/gone-server/.orphaned"), "");
  }
  // Orphaning is live: no registry rebuild needed.
  assert.equal((await callGetSkill(rig.service, "mcp:gone-server:old")).code, 4014);
});

void test("bad packages are left out with an ERROR log line and are never served", async () => {
  const errors = rig.lines
    .filter((l) => l.level === PINO_ERROR)
    .map((l) => `${String(l.package)} ${l.msg}`);
  const expectLeftOut = [
    ["user/Bad_Name", "not a valid skill name"],
    ["user/no-skill-md", "SKILL.md is not servable"],
    ["user/no-fm", "no frontmatter"],
    ["user/bad-yaml", "not valid YAML"],
    ["user/no-desc", "description"],
    ["user/list-fm", "not a YAML mapping"],
    ["user/mismatch", "differs from the directory name"],
    ["user/dup-key", "not valid YAML"],
    ["marketplace/r1/same/skill", "claimed twice"],
    ["marketplace/r2/same/skill", "claimed twice"],
    ["mcp/bad.bundle", "not a valid bundle_id"],
    ["user/escaper", "SKILL.md is not servable (traversal)"],
  ];
  for (const [dir, why] of expectLeftOut) {
    assert.ok(
      errors.some((e) => e.startsWith(join(rig.home, dir!) + " ") && e.includes(why!)),
      `no ERROR line for ${dir} (${why}); got:\n${errors.join("\n")}`,
    );
  }
  for (const name of [
    "other-name",
    "mismatch",
    "same:skill",
    "escaper",
    "hidden-skill",
    "no-desc",
  ]) {
    assert.equal((await callGetSkill(rig.service, name)).code, 4014, name);
  }
  const text = JSON.stringify(await refs());
  assert.ok(!text.includes("OUTSIDE") && !text.includes("README"));
});

void test("the home is created 0700 with its three source folders when missing", async () => {
  const tmp = await tempDir();
  const { log } = captureLogger();
  const home = join(tmp.dir, "a", "b", "skills");
  const service = await createSkillService({
    config: testConfig(),
    home,
    minter: { mint: () => "h" },
    log,
    watch: false,
  });
  try {
    assert.equal((await stat(home)).mode & 0o777, 0o700);
    for (const sub of ["user", "marketplace", "mcp"])
      assert.ok((await stat(join(home, sub))).isDirectory());
    assert.deepEqual(await callGetSkills(service).then((r) => ("skills" in r ? r.skills : r)), []);
  } finally {
    await service.close();
    await tmp.cleanup();
  }
});
