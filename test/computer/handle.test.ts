// @pure
/**
 * Handle codec and key store (D14): round trip, kind binding, no readable path, rejection of
 * everything that does not authenticate, key file permissions, reuse across restarts, one key for
 * concurrent first starts.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  HANDLE_KEY_FILE,
  HandleCodec,
  loadOrCreateHandleKey,
  MAX_HANDLE_CHARS,
} from "../../computer/blob/handle.ts";

const root = mkdtempSync(join(tmpdir(), "a2c-handle-"));
after(() => rmSync(root, { recursive: true, force: true }));

const codec = new HandleCodec(randomBytes(32));
const fields = { name: "pdf-tools", rel_path: "assets/secret-report.pdf" };

void test("round trip keeps kind and fields; the handle shows no path and is short", () => {
  const h = codec.seal("skill", fields);
  assert.deepEqual(codec.open(h), { kind: "skill", fields });
  assert.match(h, /^[A-Za-z0-9_-]+$/);
  assert.ok(!h.includes("assets") && !Buffer.from(h, "base64url").includes("secret"));
  // 29 bytes of overhead (version, nonce, tag) plus the compact JSON record, in base64url.
  assert.ok(h.length <= 4 * Math.ceil((29 + JSON.stringify(["skill", fields]).length) / 3));
  assert.notEqual(codec.seal("skill", fields), h, "fresh nonce per mint");
});

void test("kind is bound: a tool handle never opens as a skill one", () => {
  assert.equal(codec.open(codec.seal("tool", { cid: "x" }))?.kind, "tool");
});

void test("foreign key, wrong version, truncation, bit flips, re-encodings, empty, over-long fail", () => {
  const h = codec.seal("skill", fields);
  const raw = Buffer.from(h, "base64url");
  assert.equal(new HandleCodec(randomBytes(32)).open(h), null, "foreign key");
  const v2 = Buffer.from(raw);
  v2[0] = 2;
  assert.equal(codec.open(v2.toString("base64url")), null, "version");
  for (let cut = 0; cut < raw.length; cut += 3) {
    assert.equal(codec.open(raw.subarray(0, cut).toString("base64url")), null, `truncated ${cut}`);
  }
  for (let bit = 0; bit < raw.length * 8; bit++) {
    const flipped = Buffer.from(raw);
    flipped[bit >> 3]! ^= 1 << (bit & 7);
    assert.equal(codec.open(flipped.toString("base64url")), null, `bit ${bit}`);
  }
  assert.equal(
    codec.open(raw.toString("base64")),
    raw.toString("base64") === h ? codec.open(h) : null,
  );
  assert.equal(codec.open(`${h}=`), null, "padding");
  assert.equal(codec.open(` ${h}`), null, "whitespace");
  assert.equal(codec.open(""), null);
  assert.equal(codec.open("A".repeat(MAX_HANDLE_CHARS + 1)), null);
  // Non-canonical last character: decodes to the same bytes, is not what we minted.
  const last = h.at(-1)!;
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (const c of alphabet) {
    if (c === last) continue;
    const alt = h.slice(0, -1) + c;
    if (Buffer.from(alt, "base64url").equals(raw)) assert.equal(codec.open(alt), null);
  }
});

void test("key store: 0700 dir, 0600 key, reused on restart, so handles survive", async () => {
  const dir = join(root, "state-a", "nested");
  const key1 = await loadOrCreateHandleKey(dir);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, HANDLE_KEY_FILE)).mode & 0o777, 0o600);
  const h = new HandleCodec(key1).seal("tool", { cid: "abc" });
  const key2 = await loadOrCreateHandleKey(dir);
  assert.deepEqual(key2, key1);
  assert.deepEqual(new HandleCodec(key2).open(h), { kind: "tool", fields: { cid: "abc" } });
  assert.deepEqual(readdirSync(dir), [HANDLE_KEY_FILE], "no temp files left behind");
});

void test("concurrent first starts sharing a state dir agree on one key", async () => {
  const dir = join(root, "state-b");
  const keys = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateHandleKey(dir)));
  for (const k of keys) assert.deepEqual(k, keys[0]);
  assert.deepEqual(readdirSync(dir), [HANDLE_KEY_FILE]);
});

void test("a corrupt key file is an error, never silently replaced", async () => {
  const dir = join(root, "state-c");
  await loadOrCreateHandleKey(dir);
  const { writeFileSync } = await import("node:fs");
  writeFileSync(join(dir, HANDLE_KEY_FILE), "short");
  await assert.rejects(loadOrCreateHandleKey(dir), /corrupt/);
});
