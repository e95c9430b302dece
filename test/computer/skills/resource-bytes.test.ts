// @pure
// too_large (protocol.md §7.7) and the resource-bytes rules of D21: frontmatter stripping (CRLF,
// BOM, nested SKILL.md, no closing fence), the hard cap on the bytes actually served, and the
// inline body falling back to a handle when the ack would not fit the Server's buffer.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GetSkillRetSchema, isErrorPayload } from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writePackage,
} from "../../support/skills-fixtures.ts";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

void test("33: over the hard cap → 4017 too_large with details.total_size (and the cap), no handle anywhere", async () => {
  const rig = await startSkillRig(
    async (home) => {
      await writePackage(home, "user/big", skillMd("big", "b".repeat(100)), {
        "at-cap.bin": Buffer.alloc(1000, 1),
        "over.bin": Buffer.alloc(1001, 1),
        "over.txt": "t".repeat(5000),
      });
    },
    { config: { maxSize: 1000 } },
  );
  try {
    for (const [rel, size] of [
      ["over.bin", 1001],
      ["over.txt", 5000],
    ] as const) {
      const ret = await callGetSkill(rig.service, "big", rel);
      assert.deepEqual(ret, {
        code: 4017,
        message: "Skill resource not accessible",
        details: { reason: "too_large", rel_path: rel, total_size: size, max_size: 1000 },
      });
      assert.ok(!JSON.stringify(ret).includes("blob_handle"));
    }
    const at = GetSkillRetSchema.parse(await callGetSkill(rig.service, "big", "at-cap.bin"));
    assert.equal(at.total_size, 1000);
    assert.ok(at.blob_handle);
  } finally {
    await rig.close();
  }
});

void test("33: the cap applies to the stripped SKILL.md bytes, not the file size", async () => {
  const fm = ["metadata:", `  pad: "${"p".repeat(400)}"`];
  const rig = await startSkillRig(
    async (home) => {
      await writePackage(home, "user/fits", skillMd("fits", "f".repeat(1000), fm));
      await writePackage(home, "user/over", skillMd("over", "o".repeat(1001), fm));
    },
    { config: { maxSize: 1000 } },
  );
  try {
    const fits = GetSkillRetSchema.parse(await callGetSkill(rig.service, "fits"));
    assert.equal(fits.total_size, 1000);
    const over = await callGetSkill(rig.service, "over");
    assert.ok(isErrorPayload(over));
    assert.deepEqual(over.details, { reason: "too_large", total_size: 1001, max_size: 1000 });
  } finally {
    await rig.close();
  }
});

void test("frontmatter: CRLF fences, BOM, nested SKILL.md stripped, body untrimmed; no closing fence → raw", async () => {
  const crlf = "---\r\nname: crlf\r\ndescription: CRLF skill\r\n---\r\n\r\nBody line\r\n";
  const bom = "\ufeff---\nname: bom\ndescription: BOM skill\n---  \nbom body";
  const nested = "---\nname: whatever\n---\nnested body\n";
  const unclosed = "---\nname: x\nno closing fence\n";
  const rig = await startSkillRig(async (home) => {
    await writePackage(home, "user/crlf", crlf, {
      "docs/SKILL.md": nested,
      "u/SKILL.md": unclosed,
    });
    await writePackage(home, "user/bom", bom);
  });
  try {
    const a = GetSkillRetSchema.parse(await callGetSkill(rig.service, "crlf"));
    assert.equal(a.body, "\r\nBody line\r\n");
    assert.equal(a.sha256, sha("\r\nBody line\r\n"));
    const b = GetSkillRetSchema.parse(await callGetSkill(rig.service, "bom"));
    assert.equal(b.body, "bom body");
    const n = GetSkillRetSchema.parse(await callGetSkill(rig.service, "crlf", "docs/SKILL.md"));
    assert.equal(n.body, "nested body\n");
    assert.equal(n.mime_type, "text/markdown");
    const u = GetSkillRetSchema.parse(await callGetSkill(rig.service, "crlf", "u/SKILL.md"));
    assert.equal(u.body, unclosed);
  } finally {
    await rig.close();
  }
});

void test("a large SKILL.md body goes by handle, and the pulled bytes hash to the stripped body's sha256", async () => {
  const body = "# Big\n" + "line of text\n".repeat(5000);
  const rig = await startSkillRig(async (home) => {
    await writePackage(home, "user/large", skillMd("large", body));
  });
  try {
    const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, "large"));
    assert.ok(ret.blob_handle);
    assert.equal(ret.total_size, Buffer.byteLength(body));
    assert.equal(ret.sha256, sha(body));
    const { bytes, chunks } = await rig.drain(ret.blob_handle, 7000);
    assert.equal(bytes.toString(), body);
    assert.ok(chunks.length > 5);
    for (const c of chunks) {
      assert.equal(c.sha256, ret.sha256);
      assert.equal(c.total_size, ret.total_size);
      assert.equal(c.mime_type, "text/markdown");
    }
  } finally {
    await rig.close();
  }
});

void test("an inline body whose JSON ack would not fit maxHttpBufferSize becomes a handle (D16)", async () => {
  // 20,000 control bytes: valid UTF-8 text within the budget, but JSON-escaped 6× (\u0001).
  const ctl = "\u0001".repeat(20_000);
  const rig = await startSkillRig(
    async (home) => {
      await writePackage(home, "user/esc", skillMd("esc", "x"), {
        "ctl.txt": ctl,
        "ok.txt": "y".repeat(20_000),
      });
    },
    { config: { maxHttpBufferSize: 100_000 } },
  );
  try {
    const esc = GetSkillRetSchema.parse(await callGetSkill(rig.service, "esc", "ctl.txt"));
    assert.equal(esc.body, undefined);
    assert.ok(esc.blob_handle);
    assert.equal((await rig.drain(esc.blob_handle)).bytes.toString(), ctl);
    const ok = GetSkillRetSchema.parse(await callGetSkill(rig.service, "esc", "ok.txt"));
    assert.equal(ok.body?.length, 20_000);
  } finally {
    await rig.close();
  }
});

void test("a SKILL.md that grew past the hard cap after minting is gone at pull time", async () => {
  let root = "";
  const rig = await startSkillRig(
    async (home) => {
      root = await writePackage(home, "user/grow", skillMd("grow", "g".repeat(900)));
    },
    { config: { maxSize: 1000, inlineBudget: 100 } },
  );
  try {
    const minted = GetSkillRetSchema.parse(await callGetSkill(rig.service, "grow"));
    assert.ok(minted.blob_handle);
    assert.equal((await rig.drain(minted.blob_handle)).bytes.length, 900);
    await writeFile(join(root, "SKILL.md"), skillMd("grow", "g".repeat(1001)));
    const ret = await rig.engine.getBlob({
      agent: "a",
      req_id: "r-grow",
      computer: "pc-test",
      blob_handle: minted.blob_handle,
    });
    assert.deepEqual(ret, {
      code: 4018,
      message: "Blob not accessible",
      details: { reason: "gone" },
    });
  } finally {
    await rig.close();
  }
});
