// @pure
/**
 * A large SKILL.md body is derived once into a content-addressed file and served from it like a
 * raw file: get_skill and every pull after it cost no further derivation or hash (the engine knows
 * the file's digest from its production). The file is a cache: one corrupted or removed on disk
 * is never served; the engine has it made again and the pull gets the right bytes.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { GetSkillRetSchema } from "../../../protocol/index.ts";
import { callGetSkill, startSkillRig, writePackage } from "../../support/skills-fixtures.ts";
import { versionBytes } from "../support/rewriter.ts";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const body = versionBytes(7, 1024 * 1024 + 17);
const file = Buffer.concat([Buffer.from("---\nname: big\ndescription: big body\n---\n"), body]);

async function rig() {
  return startSkillRig(
    async (home) => {
      const root = await writePackage(home, "user/big", "");
      writeFileSync(join(root, "SKILL.md"), file);
    },
    { shareHashes: true, settleMs: 0 },
  );
}

void test("get_skill and the pulls after it derive and hash a large body once", async () => {
  const r = await rig();
  try {
    const minted = GetSkillRetSchema.parse(await callGetSkill(r.service, "big"));
    assert.equal(minted.sha256, sha(body));
    assert.equal(minted.total_size, body.length);
    for (let i = 0; i < 3; i++) {
      const { bytes, chunks } = await r.drain(minted.blob_handle!, 100_000);
      assert.ok(bytes.equals(body));
      assert.ok(chunks.every((c) => c.sha256 === minted.sha256));
    }
    assert.equal(r.service.derived.productions.file, 1);
    assert.equal(await r.hashComputations(), 0, "the engine hashed nothing itself");
  } finally {
    await r.close();
  }
});

void test("a derived file corrupted or removed on disk is made again, never served", async () => {
  const r = await rig();
  try {
    const minted = GetSkillRetSchema.parse(await callGetSkill(r.service, "big"));
    const handle = minted.blob_handle!;
    const stored = join(r.service.derived.dir, minted.sha256);
    writeFileSync(stored, versionBytes(8, body.length)); // same size, other bytes
    assert.ok((await r.drain(handle, 100_000)).bytes.equals(body));
    assert.equal(r.service.derived.productions.file, 2);
    rmSync(stored);
    assert.ok((await r.drain(handle, 100_000)).bytes.equals(body));
    assert.equal(r.service.derived.productions.file, 3);
  } finally {
    await r.close();
  }
});
