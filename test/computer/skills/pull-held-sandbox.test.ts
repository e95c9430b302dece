// @pure
// The pull-time sandbox answered from the engine's descriptor (computer/skills/sandbox.ts,
// HeldSandbox): a second pull of an unchanged file skips the component walk, and after any change
// between two chunks (the file or a directory swapped for a symlink, a hard link made, the file
// replaced or deleted, the package root moved or replaced) the pull answers exactly what the full
// D17 check answers at that moment, never bytes the full check would refuse.
import assert from "node:assert/strict";
import { link, mkdir, rename, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import { GetSkillRetSchema, type GetBlobRet } from "../../../protocol/index.ts";
import type { HandleFields, Producer } from "../../../computer/contracts.ts";
import {
  callGetSkill,
  skillMd,
  startSkillRig,
  writeFileDeep,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

const SIZE = 40_000; // over the inline budget: served by handle
const INSIDE = Buffer.alloc(SIZE, "i");
const OUTSIDE = Buffer.alloc(SIZE, "O");

const rigs: SkillRig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.close()));
});

interface Fixture {
  rig: SkillRig;
  home: string;
  root: string;
  outside: string;
  producer: Producer;
}

async function fixture(): Promise<Fixture> {
  let root = "";
  const rig = await startSkillRig(async (home) => {
    root = await writePackage(home, "user/demo", skillMd("demo", "body"), {
      "top.bin": INSIDE,
      "sub/data.bin": INSIDE,
      ".skillenv": "SECRET=1",
    });
    await writeFileDeep(join(home, "..", "outside", "top.bin"), OUTSIDE);
    await writeFileDeep(join(home, "..", "outside", "sub", "data.bin"), OUTSIDE);
    await writeFileDeep(join(home, "..", "outside", "data.bin"), OUTSIDE);
  });
  rigs.push(rig);
  const producer = rig.service.producers.find((p) => p.kind === "skill")!;
  return { rig, home: rig.home, root, outside: join(rig.home, "..", "outside"), producer };
}

/** Pull-time checks so far that walked the path (`a2c_computer_sandbox_checks_total`). */
async function walks(fx: Fixture): Promise<number> {
  const m = await fx.rig.metrics.sandboxChecks.get();
  return m.values.find((v) => v.labels.path === "walk")?.value ?? 0;
}

let n = 0;
async function pull(fx: Fixture, handle: string): Promise<GetBlobRet | { code: number }> {
  return await fx.rig.engine.getBlob({
    agent: "a",
    req_id: `held-${++n}`,
    computer: "pc-test",
    blob_handle: handle,
    max_chunk_bytes: SIZE,
  });
}

/** A handle for `rel`, pulled twice: the second pull must not walk the package. */
async function warm(fx: Fixture, rel: string): Promise<{ handle: string; fields: HandleFields }> {
  const minted = GetSkillRetSchema.parse(await callGetSkill(fx.rig.service, "demo", rel));
  assert.ok(minted.blob_handle);
  const first = await pull(fx, minted.blob_handle);
  assert.ok("blob" in first, JSON.stringify(first));
  const walked = await walks(fx);
  const second = await pull(fx, minted.blob_handle);
  assert.ok("blob" in second && Buffer.from(second.blob as string, "base64").equals(INSIDE));
  assert.equal(await walks(fx), walked, "the second pull was answered from the descriptor");
  return { handle: minted.blob_handle, fields: { n: "demo", p: rel } };
}

/**
 * Pulls `handle` after a change and checks the answer against the full check's verdict right
 * after: refused for the same reason, or served the bytes of the file it names.
 */
async function agreesWithFullCheck(
  fx: Fixture,
  handle: string,
  fields: HandleFields,
): Promise<string> {
  const got = await pull(fx, handle);
  const full = await fx.producer.resolve(fields); // no descriptor offered: the full walk
  if (full === null || !full.ok) {
    assert.deepEqual(got, {
      code: 4018,
      message: "Blob not accessible",
      details: { reason: full === null ? "invalid_handle" : full.reason },
    });
    return full === null ? "invalid_handle" : full.reason;
  }
  assert.ok("blob" in got, JSON.stringify(got));
  assert.equal(full.source.type, "file");
  const served = Buffer.from(got.blob as string, "base64");
  return served.equals(INSIDE) ? "inside" : served.equals(OUTSIDE) ? "outside" : "other";
}

void test("the file swapped for a symlink to outside the package: forbidden", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await symlink(join(fx.outside, "top.bin"), join(fx.root, "top.lnk"));
  await rename(join(fx.root, "top.lnk"), join(fx.root, "top.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "forbidden");
});

void test("the file swapped for a symlink to .skillenv: forbidden", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await symlink(".skillenv", join(fx.root, "top.lnk"));
  await rename(join(fx.root, "top.lnk"), join(fx.root, "top.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "forbidden");
});

void test("a directory on the path swapped for a symlink to outside: forbidden", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "sub/data.bin");
  await rename(join(fx.root, "sub"), join(fx.root, "..", "sub.aside"));
  await symlink(join(fx.outside, "sub"), join(fx.root, "sub"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "forbidden");
});

void test("a directory on the path moved and replaced by a real one: the new file", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "sub/data.bin");
  await rename(join(fx.root, "sub"), join(fx.root, "sub.old"));
  await writeFileDeep(join(fx.root, "sub", "data.bin"), Buffer.alloc(SIZE, "n"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "other");
});

void test("a hard link made between two chunks: forbidden", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "sub/data.bin");
  await link(join(fx.root, "sub", "data.bin"), join(fx.outside, "linked.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "forbidden");
});

void test("the file replaced by a new one (rename over): the new content", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await writeFile(join(fx.root, "top.new"), Buffer.alloc(SIZE, "n"));
  await rename(join(fx.root, "top.new"), join(fx.root, "top.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "other");
});

void test("the file deleted: gone", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await unlink(join(fx.root, "top.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "gone");
});

void test("the package root moved away and a symlink to another folder put there", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "sub/data.bin");
  await rename(fx.root, join(fx.home, "..", "demo.aside"));
  await symlink(fx.outside, fx.root);
  // The root is now the other folder (a package root may be a symlink): what it holds is served.
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "outside");
});

void test("the package root replaced by a file, then removed: gone", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await rename(fx.root, join(fx.home, "..", "demo.aside"));
  await writeFile(fx.root, "not a folder");
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "gone");
  await rm(fx.root);
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "gone");
});

void test("after a refusal and a repair, pulls are answered from the descriptor again", async () => {
  const fx = await fixture();
  const { handle, fields } = await warm(fx, "top.bin");
  await rename(join(fx.root, "top.bin"), join(fx.root, "top.aside"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "gone");
  await mkdir(join(fx.root, "unrelated"));
  await rename(join(fx.root, "top.aside"), join(fx.root, "top.bin"));
  assert.equal(await agreesWithFullCheck(fx, handle, fields), "inside");
  const walked = await walks(fx);
  assert.ok("blob" in (await pull(fx, handle)));
  assert.equal(await walks(fx), walked);
});
