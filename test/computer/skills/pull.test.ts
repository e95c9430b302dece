// @pure
// Pull time: the blob transport (protocol.md §6) for skill handles through the real blob engine, and the D17
// re-authorization outcomes when the package changes after minting.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import {
  encodedAckBytes,
  GetSkillRetSchema,
  isErrorPayload,
  type GetBlobReq,
} from "../../../protocol/index.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const BODY = "# Pull me\n" + "0123456789abcdef\n".repeat(4000); // 68 KB: over the inline budget
const DATA = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 31) & 0xff));

let rig: SkillRig;
let root = "";
beforeEach(async () => {
  rig = await startSkillRig(async (home) => {
    root = await writePackage(home, "user/demo", skillMd("demo", BODY), {
      "assets/data.bin": DATA,
      "assets/empty.png": Buffer.alloc(0),
      ".skillenv": "SECRET=SKILLENV-SECRET",
    });
    await writeFileDeep(join(home, "..", "outside.bin"), "OUTSIDE-SECRET");
    await writePackage(home, "mcp/srv/tool-help", skillMd("tool-help", "h"), { "big.bin": DATA });
  });
});
afterEach(() => rig.close());

let n = 0;
const req = (handle: string, extra: Partial<GetBlobReq> = {}): GetBlobReq => ({
  agent: "agent-1",
  req_id: `pull-${++n}`,
  computer: "pc-test",
  blob_handle: handle,
  ...extra,
});

async function handleFor(name: string, rel?: string) {
  const ret = GetSkillRetSchema.parse(await callGetSkill(rig.service, name, rel));
  assert.ok(ret.blob_handle, `${name} ${rel} should be a handle`);
  return ret;
}

void test("40/41/42: a full pull agrees with get_skill on size and sha256; chunks are consistent", async () => {
  for (const rel of [undefined, "assets/data.bin"]) {
    const minted = await handleFor("demo", rel);
    const { bytes, chunks } = await rig.drain(minted.blob_handle!, 30_000);
    assert.equal(bytes.length, minted.total_size);
    assert.equal(sha(bytes), minted.sha256);
    assert.deepEqual(bytes, rel ? DATA : Buffer.from(BODY));
    let offset = 0;
    for (const c of chunks) {
      assert.deepEqual(
        [c.blob_handle, c.total_size, c.sha256, c.mime_type],
        [minted.blob_handle, minted.total_size, minted.sha256, minted.mime_type],
      );
      const len = Buffer.from(c.blob as string, "base64").length;
      assert.equal(c.chunk_offset, offset);
      assert.equal(c.eof, offset + len === c.total_size);
      offset += len;
    }
  }
});

void test("41/45: req_id is echoed and an omitted chunk_offset means 0", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  const r = req(minted.blob_handle!);
  const ret = await rig.engine.getBlob(r);
  assert.ok(!isErrorPayload(ret));
  assert.equal(ret.req_id, r.req_id);
  assert.equal(ret.chunk_offset, 0);
});

void test("43/44: offset == total_size is an empty eof chunk; total+1 and -1 are range", async () => {
  const minted = await handleFor("demo");
  const end = await rig.engine.getBlob(
    req(minted.blob_handle!, { chunk_offset: minted.total_size }),
  );
  assert.ok(!isErrorPayload(end));
  assert.deepEqual([end.blob, end.eof], ["", true]);
  for (const off of [minted.total_size + 1, -1]) {
    assert.deepEqual(await rig.engine.getBlob(req(minted.blob_handle!, { chunk_offset: off })), {
      code: 4018,
      message: "Blob not accessible",
      details: { reason: "range" },
    });
  }
});

void test("46: max_chunk_bytes 10 → at most 10 bytes; a huge one is clamped to fit maxHttpBufferSize", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  const small = await rig.engine.getBlob(req(minted.blob_handle!, { max_chunk_bytes: 10 }));
  assert.ok(!isErrorPayload(small));
  assert.equal(Buffer.from(small.blob as string, "base64").length, 10);
  const big = await rig.engine.getBlob(req(minted.blob_handle!, { max_chunk_bytes: 1e9 }));
  assert.ok(!isErrorPayload(big));
  assert.ok(encodedAckBytes(big) <= 1_000_000);
});

void test("47: garbage handles are invalid_handle", async () => {
  for (const h of ["xyz", "", "A".repeat(100)]) {
    const ret = await rig.engine.getBlob(req(h));
    assert.ok(isErrorPayload(ret) && ret.details?.reason === "invalid_handle", h);
  }
});

void test("48/D17: skill uninstalled after minting → gone (before and after the registry notices)", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  const md = await handleFor("demo");
  await rm(root, { recursive: true });
  for (let pass = 0; pass < 2; pass++) {
    for (const h of [minted.blob_handle!, md.blob_handle!]) {
      const ret = await rig.engine.getBlob(req(h));
      assert.ok(isErrorPayload(ret) && ret.details?.reason === "gone", `pass ${pass}`);
    }
    await rig.service.refresh(); // now not even in the registry
  }
});

void test("48/D17: file deleted after minting → gone", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  await unlink(join(root, "assets/data.bin"));
  const ret = await rig.engine.getBlob(req(minted.blob_handle!));
  assert.deepEqual(ret, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "gone" },
  });
});

void test("D17: skill orphaned after minting → forbidden; marker removed → served again", async () => {
  const minted = await handleFor("mcp:srv:tool-help", "big.bin");
  await writeFile(join(rig.home, "mcp/srv/.orphaned"), "");
  const ret = await rig.engine.getBlob(req(minted.blob_handle!));
  assert.ok(isErrorPayload(ret) && ret.details?.reason === "forbidden");
  await unlink(join(rig.home, "mcp/srv/.orphaned"));
  assert.ok(!isErrorPayload(await rig.engine.getBlob(req(minted.blob_handle!))));
});

void test("D17: file replaced by a symlink to outside, or to .skillenv → forbidden, never its bytes", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  await unlink(join(root, "assets/data.bin"));
  await symlink(join(rig.home, "..", "outside.bin"), join(root, "assets/data.bin"));
  let ret = await rig.engine.getBlob(req(minted.blob_handle!));
  assert.deepEqual(ret, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "forbidden" },
  });
  await unlink(join(root, "assets/data.bin"));
  await symlink("../.skillenv", join(root, "assets/data.bin"));
  ret = await rig.engine.getBlob(req(minted.blob_handle!));
  assert.deepEqual(ret, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "forbidden" },
  });
});

void test("49: authenticated handles naming .skillenv or an escaping path are forbidden; wrong shapes invalid_handle", async () => {
  // The engine's own minter stands in for a forger who somehow holds the key.
  const forged = (fields: Readonly<Record<string, string>>) => rig.engine.mint("skill", fields);
  for (const p of [".skillenv", ".SKILLENV", "../../outside.bin", "/etc/passwd", "a\\b"]) {
    const ret = await rig.engine.getBlob(req(forged({ n: "demo", p })));
    assert.deepEqual(
      ret,
      { code: 4018, message: "Blob not accessible", details: { reason: "forbidden" } },
      p,
    );
  }
  const shapes: Array<Record<string, string>> = [
    { n: "demo" },
    { n: "bad name", p: "SKILL.md" },
    { n: "demo", p: "SKILL.md", x: "1" },
    { n: "demo", p: "" },
  ];
  for (const fields of shapes) {
    const ret = await rig.engine.getBlob(req(forged(fields)));
    assert.ok(
      isErrorPayload(ret) && ret.details?.reason === "invalid_handle",
      JSON.stringify(fields),
    );
  }
  assert.deepEqual(await rig.engine.getBlob(req(forged({ n: "nobody", p: "SKILL.md" }))), {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "gone" },
  });
});

void test("50: repeated requests are byte-identical; interleaved offsets all succeed", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  const r = req(minted.blob_handle!, { chunk_offset: 1234, max_chunk_bytes: 5000 });
  assert.deepEqual(await rig.engine.getBlob(r), await rig.engine.getBlob(r));
  const offsets = [150_000, 0, 90_000, 10_000, 199_999];
  const parts = await Promise.all(
    offsets.map((o) =>
      rig.engine.getBlob(req(minted.blob_handle!, { chunk_offset: o, max_chunk_bytes: 1000 })),
    ),
  );
  parts.forEach((p, i) => {
    assert.ok(!isErrorPayload(p));
    const o = offsets[i]!;
    assert.deepEqual(Buffer.from(p.blob as string, "base64"), DATA.subarray(o, o + 1000));
  });
});

void test("51: an empty binary resource is one response {total_size 0, eof true, blob ''}", async () => {
  const minted = await handleFor("demo", "assets/empty.png");
  assert.equal(minted.total_size, 0);
  const { chunks } = await rig.drain(minted.blob_handle!);
  assert.equal(chunks.length, 1);
  assert.deepEqual([chunks[0]!.total_size, chunks[0]!.eof, chunks[0]!.blob], [0, true, ""]);
  assert.equal(chunks[0]!.sha256, sha(""));
});

void test("52: failures are flat with details.reason and carry no path or secret", async () => {
  const minted = await handleFor("demo", "assets/data.bin");
  await unlink(join(root, "assets/data.bin"));
  await symlink(join(rig.home, "..", "outside.bin"), join(root, "assets/data.bin"));
  for (const h of [minted.blob_handle!, "junk"]) {
    const ret = await rig.engine.getBlob(req(h));
    assert.ok(isErrorPayload(ret));
    assert.deepEqual(Object.keys(ret).sort(), ["code", "details", "message"]);
    assert.equal(typeof ret.details?.reason, "string");
    const text = JSON.stringify(ret);
    assert.ok(!text.includes(rig.home) && !text.includes("SECRET") && !("error" in ret));
  }
});

void test("a rewritten file is served with its new size and sha256 at pull time (SKILL.md and raw)", async () => {
  const md = await handleFor("demo");
  const raw = await handleFor("demo", "assets/data.bin");
  const newBody = BODY.replace("Pull me", "Pulled!") + "more\n";
  await writeFile(join(root, "SKILL.md"), skillMd("demo", newBody));
  await writeFile(join(root, "assets/data.bin"), DATA.subarray(0, 1000));
  const a = await rig.drain(md.blob_handle!);
  assert.equal(a.bytes.toString(), newBody);
  assert.equal(a.chunks[0]!.sha256, sha(newBody));
  const b = await rig.drain(raw.blob_handle!);
  assert.deepEqual(b.bytes, DATA.subarray(0, 1000));
  assert.equal(b.chunks[0]!.total_size, 1000);
  assert.equal(b.chunks[0]!.sha256, sha(DATA.subarray(0, 1000)));
});
