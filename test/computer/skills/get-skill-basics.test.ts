// @pure
// client:get_skills / client:get_skill answers on real packages (protocol.md §7.2, §7.4–§7.8).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import { GetSkillRetSchema, GetSkillsRetSchema, isErrorPayload } from "../../../protocol/index.ts";
import {
  callGetSkill,
  callGetSkills,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const BODY = "# Demo\n\nRun `scripts/run.sh` with ${TFROBOT_SKILL_DIR}.\n";

let rig: SkillRig;
before(async () => {
  rig = await startSkillRig(async (home) => {
    await writePackage(
      home,
      "user/demo",
      `---\nname: demo\ndescription: A demo skill\nlicense: MIT\n---\n${BODY}`,
      {
        "notes.txt": "plain notes\n",
        "empty.txt": "",
        "big.txt": "x".repeat(32 * 1024 + 1),
        "edge.txt": "y".repeat(32 * 1024),
        "pixel.png": Buffer.from([0x89]),
        "data.bin": Buffer.alloc(0),
        "latin1.txt": Buffer.from([0x63, 0x61, 0x66, 0xe9]), // "café" in latin-1: not UTF-8
        "bom.md": Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("hi\n")]),
        "m/a.md": "a",
        "m/a.markdown": "a",
        "m/a.txt": "a",
        "m/a.json": "{}",
        "m/a.xml": "<a/>",
        "m/a.yaml": "a: 1",
        "m/a.yml": "a: 1",
        "m/a.toml": "a = 1",
        "m/a.rst": "a",
        "m/A.JSON": "{}",
      },
    );
  });
});
after(() => rig.close());

void test("22: get_skills returns {skills, req_id}; refs carry the four required fields and no body", async () => {
  const ret = await callGetSkills(rig.service);
  assert.ok(!isErrorPayload(ret));
  const parsed = GetSkillsRetSchema.parse(ret);
  assert.equal(parsed.skills.length, 1);
  const ref = parsed.skills[0]!;
  assert.deepEqual(
    { name: ref.name, source: ref.source, description: ref.description, license: ref.license },
    { name: "demo", source: "user", description: "A demo skill", license: "MIT" },
  );
  assert.ok(ref.path.startsWith("/") && ref.path.endsWith("/user/demo"));
  assert.ok(!("body" in ref) && !("version" in ref) && !("uri" in ref));
});

void test("24/25: malformed names are 4016 before any registry lookup", async () => {
  for (const name of [
    "bad name!!",
    "a:b:c:d",
    "foo:bar:baz",
    "",
    "Demo",
    "demo-",
    "a--b",
    ":demo",
    "mcp:a.b:x",
    "mcp:a__b:x",
    "x".repeat(65),
  ]) {
    const ret = await callGetSkill(rig.service, name);
    assert.ok(isErrorPayload(ret), name);
    assert.equal(ret.code, 4016, name);
    assert.equal(ret.message, "Invalid skill name format");
    assert.deepEqual(ret.details, { name });
  }
});

void test("26: a well-formed unknown name is 4014 with details.name (D22)", async () => {
  for (const name of ["nope", "plug:nope", "mcp:bundle_1:nope"]) {
    const ret = await callGetSkill(rig.service, name);
    assert.deepEqual(ret, { code: 4014, message: "Skill not found", details: { name } });
  }
});

void test("27: no rel_path → SKILL.md body after the frontmatter, size and sha256 of those bytes", async () => {
  for (const rel of [undefined, ""]) {
    const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", rel));
    assert.equal(ret.rel_path, "SKILL.md");
    assert.equal(ret.mime_type, "text/markdown");
    assert.equal(ret.body, BODY); // placeholders are not expanded
    assert.equal(ret.total_size, Buffer.byteLength(BODY));
    assert.equal(ret.sha256, sha(BODY));
    assert.equal(ret.blob_handle, undefined);
  }
});

void test("34/35: text within the inline budget is a body; one byte over is a handle", async () => {
  const edge = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "edge.txt"));
  assert.equal(edge.body?.length, 32 * 1024);
  assert.equal(edge.blob_handle, undefined);
  const big = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "big.txt"));
  assert.equal(big.body, undefined);
  assert.ok(big.blob_handle);
  assert.equal(big.total_size, 32 * 1024 + 1);
  assert.equal(big.sha256, sha("x".repeat(32 * 1024 + 1)));
});

void test("36: a binary MIME (.png, 1 byte) is always a handle", async () => {
  const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "pixel.png"));
  assert.equal(ret.mime_type, "image/png");
  assert.equal(ret.body, undefined);
  assert.ok(ret.blob_handle);
  assert.equal(ret.total_size, 1);
});

void test("37: an empty text file is body '' with the sha256 of empty input", async () => {
  const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "empty.txt"));
  assert.deepEqual(
    { body: ret.body, total_size: ret.total_size, sha256: ret.sha256, mime: ret.mime_type },
    { body: "", total_size: 0, sha256: sha(""), mime: "text/plain" },
  );
});

void test("38: never both body and blob_handle, never neither (every file of the package)", async () => {
  for (const rel of [
    "SKILL.md",
    "notes.txt",
    "empty.txt",
    "big.txt",
    "pixel.png",
    "data.bin",
    "latin1.txt",
    "bom.md",
  ]) {
    const ret = await callGetSkill(rig.service, "demo", rel);
    assert.ok(!isErrorPayload(ret), rel);
    assert.ok(GetSkillRetSchema.safeParse(ret).success, rel);
  }
});

void test("39: mandated extensions map to the mandated MIME types (case-insensitive)", async () => {
  const want: Record<string, string> = {
    "m/a.md": "text/markdown",
    "m/a.markdown": "text/markdown",
    "m/a.txt": "text/plain",
    "m/a.json": "application/json",
    "m/a.xml": "application/xml",
    "m/a.yaml": "application/yaml",
    "m/a.yml": "application/yaml",
    "m/a.toml": "application/toml",
    "m/a.rst": "text/x-rst",
    "m/A.JSON": "application/json",
    "data.bin": "application/octet-stream",
  };
  for (const [rel, mime] of Object.entries(want)) {
    const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", rel));
    assert.equal(ret.mime_type, mime, rel);
    if (mime !== "application/octet-stream") assert.equal(typeof ret.body, "string", rel);
  }
});

void test("text that is not valid UTF-8 gets a handle (D21); a BOM survives so sha256(utf8(body)) holds", async () => {
  const latin = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "latin1.txt"));
  assert.equal(latin.body, undefined);
  assert.ok(latin.blob_handle);
  const bom = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "bom.md"));
  assert.equal(bom.sha256, sha(Buffer.from(bom.body!, "utf8")));
  assert.equal(bom.total_size, 6);
});

void test("rel_path is echoed verbatim (e.g. './notes.txt')", async () => {
  const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "./notes.txt"));
  assert.equal(ret.rel_path, "./notes.txt");
  assert.equal(ret.body, "plain notes\n");
});

void test("a new file shows up with a new hash when rewritten (no stale cache)", async () => {
  await writeFileDeep(`${rig.home}/user/demo/notes.txt`, "v2\n");
  const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "demo", "notes.txt"));
  assert.equal(ret.body, "v2\n");
  assert.equal(ret.sha256, sha("v2\n"));
});
