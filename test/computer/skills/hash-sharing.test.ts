// @pure
// With the engine's HashCache wired in, a raw file hashed by get_skill at mint time is not hashed
// again by the pull, and both report the same digest; a rewrite is hashed afresh.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GetSkillRetSchema } from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writePackage,
} from "../../support/skills-fixtures.ts";

const DATA = Buffer.alloc(3 * 1024 * 1024, 7);

void test("one hash per content across mint and pull", async () => {
  let root = "";
  const rig = await startSkillRig(
    async (home) => {
      root = await writePackage(home, "user/big", skillMd("big", "b"), { "blob.bin": DATA });
    },
    { shareHashes: true },
  );
  try {
    const minted = GetSkillRetSchema.parse(await callGetSkill(rig.service, "big", "blob.bin"));
    assert.equal(minted.sha256, createHash("sha256").update(DATA).digest("hex"));
    assert.equal(await rig.hashComputations(), 1);
    const { bytes, chunks } = await rig.drain(minted.blob_handle!);
    assert.deepEqual(bytes, DATA);
    assert.equal(chunks[0]!.sha256, minted.sha256);
    assert.equal(await rig.hashComputations(), 1); // the pull reused the mint-time hash
    await writeFile(join(root, "blob.bin"), DATA.subarray(1));
    const again = GetSkillRetSchema.parse(await callGetSkill(rig.service, "big", "blob.bin"));
    assert.equal(again.total_size, DATA.length - 1);
    assert.equal(await rig.hashComputations(), 2);
  } finally {
    await rig.close();
  }
});
