// @pure
/**
 * The demo home matches its manifest byte for byte (the scenarios verify against it), and an
 * atomic rewrite yields a new file (new inode) with the reported sha256.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { generateDemoHome, rewriteFileAtomically } from "../../scripts/stack/demo-data.ts";
import { pngSize, readPngHeader } from "../../scripts/demo/png.ts";

const sha = (b: Buffer | string): string => createHash("sha256").update(b).digest("hex");

void test("manifest sizes and hashes are those of the files; SKILL.md hashed without frontmatter", () => {
  const dir = mkdtempSync(join(tmpdir(), "a2c-demo-"));
  try {
    const m = generateDemoHome(join(dir, "home"), { bigSize: 3 * 1024 * 1024 + 7 });
    for (const [key, f] of Object.entries(m.files)) {
      const bytes = readFileSync(f.path);
      if (key === "skillMd") {
        const text = bytes.toString("utf8");
        assert.match(text, /^---\nname: hello\ndescription: ".*"\n---\n/);
        const body = text.slice(text.indexOf("\n---\n") + 5);
        assert.equal(sha(body), f.sha256);
        assert.equal(Buffer.byteLength(body), f.size);
      } else {
        assert.equal(bytes.length, f.size, key);
        assert.equal(sha(bytes), f.sha256, key);
      }
    }
    assert.ok(m.files.guide.size > 32 * 1024, "guide is over the default inline budget");
    assert.ok(m.files.notes.size < 1024, "notes are inline");
    assert.equal(m.files.big.size, 3 * 1024 * 1024 + 7);
    const png = readFileSync(m.files.logo.path);
    assert.deepEqual(pngSize(png), { width: 480, height: 360 });
    assert.deepEqual(readPngHeader(png), { width: 480, height: 360 }, "CRCs valid");
    assert.ok(readFileSync(m.files.skillenv.path, "utf8").includes(m.secret));
    assert.equal(statSync(join(dir, "home")).mode & 0o777, 0o700);

    const before = statSync(m.files.rewrite.path).ino;
    const next = rewriteFileAtomically(m.files.rewrite.path, m.files.rewrite.size);
    assert.notEqual(next, m.files.rewrite.sha256);
    assert.equal(sha(readFileSync(m.files.rewrite.path)), next);
    assert.notEqual(statSync(m.files.rewrite.path).ino, before, "replaced, not rewritten in place");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
