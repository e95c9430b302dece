/**
 * D18 for a derived resource: a multi-MiB SKILL.md (served with its frontmatter stripped) is
 * rewritten in place (same size, and truncate-and-write to another size) and by atomic rename by
 * another process while an Agent pulls it through the real Server and Computer: raw chunks at
 * random offsets, whole SDK reads and get_skill answers. Every answer's sha256 must name a
 * version that was written and every chunk must carry exactly that version's bytes at its
 * offset; every verified delivery must be one of the versions. Refusals (`gone`) are allowed,
 * torn bytes under a digest are not. The empty file a truncate-and-write leaves between its two
 * calls is real content (skill-md-rewriter.ts says when it can be served): counted apart. Once
 * the writer stops, the last version is served.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../../agent/client.ts";
import { readBlobWithInfo } from "../../../agent/pull.ts";
import type { RunningComputer } from "../../../computer/computer.ts";
import type { SkillService } from "../../../computer/skills/index.ts";
import { ServerHarness, TEST_TOKEN } from "../../support/server-harness.ts";
import { tempDir } from "../../support/skills-fixtures.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";
import {
  EMPTY_SHA256,
  skillMdVersion,
  startSkillMdRewriter,
} from "../support/skill-md-rewriter.ts";

const BODY = 4 * 1024 * 1024;
const REWRITES = 48;
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const versions = new Map([0, 1, 2].map((v) => [sha(skillMdVersion(v, BODY).body), v]));
const bodyOf = (digest: string) =>
  digest === EMPTY_SHA256 ? Buffer.alloc(0) : skillMdVersion(versions.get(digest)!, BODY).body;
/** A version, or the empty file between a truncate and its write. */
const known = (digest: string) => versions.has(digest) || digest === EMPTY_SHA256;

let h: ServerHarness;
let pc: RunningComputer;
let agent: AgentClient;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let path = "";

before(async () => {
  tmp = await tempDir();
  const home = join(tmp.dir, "home");
  await mkdir(join(home, "user", "live"), { recursive: true });
  path = join(home, "user", "live", "SKILL.md");
  await writeFile(path, skillMdVersion(0, BODY).file);
  h = await ServerHarness.start();
  pc = await startHarnessComputer(h, tmp.dir, { skills: home, workers: 1 });
  agent = new AgentClient({ url: h.url, token: TEST_TOKEN, name: "agent-1" });
  await agent.connect();
  await agent.joinOffice("office-1");
  await agent.waitForComputer("pc-1");
});
after(async () => {
  await agent?.close();
  await pc?.close();
  await h?.close();
  await tmp?.cleanup();
});

interface Tally {
  served: number;
  refused: Record<string, number>;
  /** Answers whose sha256 names no version written (a digest of torn content). */
  unknownDigest: number;
  /** Answers whose bytes are not the named version's bytes at their offset. */
  disagreeing: number;
  deliveries: number;
  /** Verified deliveries that are neither version. */
  neither: number;
  /** Answers and deliveries of the empty file. */
  empty: number;
  digests: Set<string>;
}

function refusal(t: Tally, err: unknown): void {
  const e = err as { details?: { reason?: string }; name?: string };
  const key = e.details?.reason ?? e.name ?? "error";
  t.refused[key] = (t.refused[key] ?? 0) + 1;
}

/** Checks one answer (sha256, total_size, bytes at offset) against the written versions. */
function judge(t: Tally, digest: string, total: number, offset: number, bytes: Buffer): void {
  if (!known(digest)) {
    t.unknownDigest++;
    return;
  }
  if (digest === EMPTY_SHA256) t.empty++;
  const body = bodyOf(digest);
  const ok = total === body.length && bytes.equals(body.subarray(offset, offset + bytes.length));
  if (!ok) t.disagreeing++;
  t.served++;
  t.digests.add(digest);
}

async function audit(t: Tally, handle: string, running: () => boolean, seed: number) {
  let x = seed;
  while (running()) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const offset = x % BODY; // inside every version
    try {
      const r = await agent.getBlobChunk("pc-1", handle, {
        offset,
        maxChunkBytes: 256 * 1024,
        binary: x % 2 === 0,
      });
      const bytes =
        typeof r.blob === "string"
          ? Buffer.from(r.blob, "base64")
          : Buffer.from(r.blob.buffer, r.blob.byteOffset, r.blob.byteLength);
      judge(t, r.sha256, r.total_size, r.chunk_offset, bytes);
    } catch (err) {
      refusal(t, err);
    }
  }
}

async function readWhole(t: Tally, handle: string, running: () => boolean) {
  while (running()) {
    try {
      const { value, info } = await readBlobWithInfo(agent, "pc-1", handle, { window: 8 });
      t.deliveries++;
      if (info.sha256 === EMPTY_SHA256 && value.length === 0) t.empty++;
      else if (!versions.has(info.sha256) || sha(value) !== info.sha256) t.neither++;
    } catch (err) {
      refusal(t, err);
    }
  }
}

async function askSkill(t: Tally, running: () => boolean) {
  while (running()) {
    try {
      const r = await agent.getSkillRaw("pc-1", "live");
      if (!known(r.sha256)) t.unknownDigest++;
      else if (r.total_size !== bodyOf(r.sha256).length) t.disagreeing++;
    } catch (err) {
      refusal(t, err);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

void test("a SKILL.md rewritten in place and by rename while pulled: no torn bytes under any sha256", async () => {
  const minted = await agent.getSkillRaw("pc-1", "live");
  assert.ok(minted.blob_handle);
  assert.equal(minted.sha256, sha(skillMdVersion(0, BODY).body));
  const handle = minted.blob_handle;
  const writer = await startSkillMdRewriter(path, BODY, REWRITES);
  const t: Tally = {
    served: 0,
    refused: {},
    unknownDigest: 0,
    disagreeing: 0,
    deliveries: 0,
    neither: 0,
    empty: 0,
    digests: new Set(),
  };
  const running = () => writer.writing;
  await Promise.all([
    audit(t, handle, running, 1),
    audit(t, handle, running, 2),
    readWhole(t, handle, running),
    readWhole(t, handle, running),
    askSkill(t, running),
  ]);
  assert.equal(await writer.exited, 0);
  console.log(
    `during ${REWRITES} rewrites: ${t.served} chunks served (${t.digests.size} versions), ` +
      `${t.deliveries} whole reads, refused ${JSON.stringify(t.refused)}, ` +
      `${t.unknownDigest} answers under an unknown sha256, ${t.disagreeing} disagreeing, ` +
      `${t.neither} deliveries of neither version, ${t.empty} answers of the empty file`,
  );
  assert.equal(t.unknownDigest, 0, "answers under a sha256 of no version written");
  assert.equal(t.disagreeing, 0, "answers whose bytes disagree with their sha256");
  assert.equal(t.neither, 0, "verified deliveries that are neither version");

  // The writer is done: the last version is what get_skill and a pull now serve. The registry
  // is rebuilt first: a rescan that read the file between a truncate and its write dropped it.
  await (pc.services.find((s) => "derived" in s) as SkillService).refresh();
  const last = skillMdVersion(REWRITES % 3, BODY).body;
  const now = await agent.getSkillRaw("pc-1", "live");
  assert.equal(now.sha256, sha(last));
  assert.equal(now.total_size, last.length);
  assert.ok((await agent.readBlob("pc-1", handle)).equals(last));
});
