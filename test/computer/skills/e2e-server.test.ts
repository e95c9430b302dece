// @both-transports
// End to end through the real Server and the real Computer (startComputer with a skill home):
// get_skill mints a handle, a full client:get_blob pull agrees on total_size and sha256
// (protocol.md §6.4), and an edit burst in the home reaches the office Agent as exactly one
// notify:update_skills (protocol.md §3.2, §7.10).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../../computer/computer.ts";
import type { SkillService } from "../../../computer/skills/index.ts";
import {
  GetBlobRetSchema,
  GetSkillRetSchema,
  GetSkillsRetSchema,
  isErrorPayload,
} from "../../../protocol/index.ts";
import {
  barrier,
  emitAck,
  record,
  request,
  ServerHarness,
  waitFor,
  type Socket,
} from "../../support/server-harness.ts";
import { skillMd, tempDir, writePackage } from "../../support/skills-fixtures.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const BODY = "# Remote skill\n" + "a line of skill documentation\n".repeat(3000); // ~90 KB
const IMAGE = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) & 0xff));

let h: ServerHarness;
let pc: RunningComputer;
let agent: Socket;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let home = "";

before(async () => {
  tmp = await tempDir();
  home = join(tmp.dir, "skills");
  await mkdir(home);
  await writePackage(home, "user/remote", skillMd("remote", BODY), { "assets/pic.png": IMAGE });
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await startHarnessComputer(h, tmp.dir, { skills: home });
});
after(async () => {
  await pc?.close();
  await h?.close();
  await tmp?.cleanup();
});

async function call(event: string, extra: Record<string, unknown>): Promise<unknown> {
  const [answer] = await emitAck(agent, event, request("agent-1", "pc-1", extra));
  return answer;
}

async function pull(handle: string): Promise<{ bytes: Buffer; sha256: string; total: number }> {
  const parts: Buffer[] = [];
  let offset = 0;
  let first: { sha256: string; total_size: number } | undefined;
  for (;;) {
    const ret = GetBlobRetSchema.parse(
      await call("client:get_blob", { blob_handle: handle, chunk_offset: offset }),
    );
    first ??= ret;
    assert.equal(ret.sha256, first.sha256);
    assert.equal(ret.total_size, first.total_size);
    const b = Buffer.from(ret.blob as string, "base64");
    parts.push(b);
    offset += b.length;
    if (ret.eof) break;
  }
  return { bytes: Buffer.concat(parts), sha256: first.sha256, total: first.total_size };
}

void test("get_skills through the Server lists the home's skill", async () => {
  const ret = GetSkillsRetSchema.parse(await call("client:get_skills", {}));
  assert.deepEqual(
    ret.skills.map((s) => [s.name, s.source, s.path]),
    [["remote", "user", join(home, "user/remote")]],
  );
});

void test("40: get_skill mints a handle; a full get_blob pull agrees on total_size and sha256", async () => {
  for (const rel of [undefined, "assets/pic.png"]) {
    const minted = GetSkillRetSchema.parse(
      await call("client:get_skill", { name: "remote", ...(rel ? { rel_path: rel } : {}) }),
    );
    assert.ok(minted.blob_handle);
    const got = await pull(minted.blob_handle);
    assert.equal(got.total, minted.total_size);
    assert.equal(got.sha256, minted.sha256);
    assert.equal(sha(got.bytes), minted.sha256);
    assert.deepEqual(got.bytes, rel ? IMAGE : Buffer.from(BODY));
  }
});

void test("4016 / 4014 / 4017 arrive at the Agent as flat payloads", async () => {
  assert.equal(
    ((await call("client:get_skill", { name: "bad name!!" })) as { code: number }).code,
    4016,
  );
  assert.equal(((await call("client:get_skill", { name: "nope" })) as { code: number }).code, 4014);
  const ret = await call("client:get_skill", { name: "remote", rel_path: "../../etc/passwd" });
  assert.ok(isErrorPayload(ret));
  assert.deepEqual(ret.details, { reason: "traversal", rel_path: "../../etc/passwd" });
});

void test("61: an edit burst in the home reaches the office Agent as exactly one notify:update_skills", async () => {
  const skills = pc.services.find((s) => "whenIdle" in s) as SkillService | undefined;
  assert.ok(skills, "the Computer runs the SKILL service");
  const seen = record(agent);
  const notified = waitFor<{ computer: string }>(agent, "notify:update_skills");
  writeFileSync(join(home, "user/remote/SKILL.md"), skillMd("remote", "edited"));
  writeFileSync(join(home, "user/remote/assets/new.txt"), "new");
  writeFileSync(join(home, "user/remote/assets/pic.png"), IMAGE.subarray(0, 10));
  assert.deepEqual(await notified, { computer: "pc-1" });
  await skills.whenIdle();
  await emitAck(pc.socket, "server:list_room", null); // Server has relayed
  await barrier(agent); // and the Agent has received everything sent before
  assert.equal(seen.filter((e) => e.event === "notify:update_skills").length, 1);
  const body = GetSkillRetSchema.parse(await call("client:get_skill", { name: "remote" }));
  assert.equal(body.body, "edited");
});
