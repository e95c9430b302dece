/**
 * Snapshot consistency (D18) of a derived resource, engine-level like test/computer/snapshot.test.ts:
 * while another process rewrites a SKILL.md (in place at the same size, truncate-and-write to
 * another size, atomic rename), every chunk the engine serves carries exactly the stripped body
 * of the version its sha256 names, at its offset. Both tiers: a body small enough to be derived
 * in memory, and one derived into a file by the worker pool. The empty file a truncate-and-write
 * leaves between its two calls is real content too (skill-md-rewriter.ts): counted, not failed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { isErrorPayload } from "../../../protocol/index.ts";
import { callGetSkill, startSkillRig, writePackage } from "../../support/skills-fixtures.ts";
import {
  EMPTY_SHA256,
  skillMdVersion,
  startSkillMdRewriter,
} from "../support/skill-md-rewriter.ts";

const REWRITES = 40;
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function servedWhileRewritten(bodyBytes: number, expectTier: "memory" | "file") {
  const bodies = new Map([0, 1, 2].map((v) => [v, skillMdVersion(v, bodyBytes).body]));
  bodies.set(-1, Buffer.alloc(0));
  const versions = new Map([...bodies].map(([v, b]) => [sha(b), v]));
  assert.equal(sha(bodies.get(-1)!), EMPTY_SHA256);
  let path = "";
  const rig = await startSkillRig(async (home) => {
    const root = await writePackage(home, "user/live", "");
    path = join(root, "SKILL.md");
    await writeFile(path, skillMdVersion(0, bodyBytes).file);
  });
  let stopWriter = (): void => undefined;
  try {
    const minted = await callGetSkill(rig.service, "live");
    assert.ok(!isErrorPayload(minted) && minted.blob_handle);
    const handle = minted.blob_handle;
    const writer = await startSkillMdRewriter(path, bodyBytes, REWRITES);
    stopWriter = () => writer.kill();
    let served = 0;
    let refused = 0;
    let offset = 0;
    let seq = 0;
    const seen = new Set<string>();
    while (writer.writing) {
      // A chunk from memory or a cached descriptor may not yield: let the writer's exit be seen.
      await new Promise((resolve) => setImmediate(resolve));
      const r = await rig.engine.getBlob({
        agent: "a",
        req_id: `r${++seq}`,
        computer: "pc-test",
        blob_handle: handle,
        chunk_offset: offset,
        max_chunk_bytes: 40 * 1024,
      });
      if (isErrorPayload(r)) {
        // gone: kept changing; range: the offset was past the end of a shorter version.
        const reason = (r.details as { reason: string }).reason;
        assert.ok(reason === "gone" || reason === "range", JSON.stringify(r));
        refused++;
        offset = 0;
        continue;
      }
      const v = versions.get(r.sha256);
      assert.ok(v !== undefined, `served under ${r.sha256}, the digest of no version written`);
      const body = bodies.get(v)!;
      const bytes = Buffer.from(r.blob as string, "base64");
      assert.equal(r.total_size, body.length);
      assert.ok(
        bytes.equals(body.subarray(r.chunk_offset, r.chunk_offset + bytes.length)),
        `chunk at ${r.chunk_offset} is not version ${v}'s bytes`,
      );
      served++;
      seen.add(r.sha256);
      offset = r.eof ? 0 : r.chunk_offset + bytes.length;
    }
    assert.equal(await writer.exited, 0);
    const { bytes } = await rig.drain(handle);
    assert.ok(bytes.equals(bodies.get(REWRITES % 3)!), "the last version is served at the end");
    assert.ok(rig.service.derived.productions[expectTier] > 0, `derived in ${expectTier}`);
    console.log(
      `${expectTier} tier: ${served} chunks served (${seen.size} versions), ${refused} refused (gone, range)`,
    );
  } finally {
    stopWriter();
    await rig.close();
  }
}

void test("a SKILL.md derived in memory, rewritten while served: every chunk is its digest's version", () =>
  servedWhileRewritten(200 * 1024, "memory"));

void test("a SKILL.md derived into a file, rewritten while served: every chunk is its digest's version", () =>
  servedWhileRewritten(2 * 1024 * 1024, "file"));
