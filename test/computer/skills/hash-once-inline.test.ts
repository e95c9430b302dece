// @pure
// A small text file that get_skill read whole but could not inline (not valid UTF-8) is minted as
// a handle: its digest, computed once at mint, is reused by the pull (one hash per content, D18).
// Content younger than the settle window is not recorded (the pull hashes it itself).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { GetSkillRetSchema } from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writePackage,
} from "../../support/skills-fixtures.ts";

const BYTES = Buffer.from([0x68, 0x69, 0xff, 0xfe, 0x0a]); // "hi" + invalid UTF-8

for (const [settleMs, pullHashes] of [
  [0, 0],
  [3_600_000, 1],
] as const) {
  void test(`settle window ${settleMs} ms: ${pullHashes} hash at pull after the mint's`, async () => {
    const rig = await startSkillRig(
      async (home) => {
        await writePackage(home, "user/txt", skillMd("txt", "b"), { "odd.txt": BYTES });
      },
      { shareHashes: true, settleMs },
    );
    try {
      const minted = GetSkillRetSchema.parse(await callGetSkill(rig.service, "txt", "odd.txt"));
      assert.ok(minted.blob_handle, "not inlined: a handle");
      assert.equal(minted.sha256, createHash("sha256").update(BYTES).digest("hex"));
      assert.equal(await rig.hashComputations(), 1);
      const { bytes, chunks } = await rig.drain(minted.blob_handle);
      assert.deepEqual(bytes, BYTES);
      assert.equal(chunks[0]!.sha256, minted.sha256);
      assert.equal(await rig.hashComputations(), 1 + pullHashes);
    } finally {
      await rig.close();
    }
  });
}
