// @pure
/**
 * Protocol 0.4.0 messages: `client:put_blob` (request, the exact ack key sets, the binary offer),
 * the name_hint sanitizer with upstream's vectors, `A2CSkillRef.tags`, the ToolMeta three-layer
 * merge and the `pickString` options of 0.3.2.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  A2CSkillRefSchema,
  CLIENT_EVENTS,
  CLIENT_REQUEST_SCHEMAS,
  Events,
  landingName,
  mergeToolMeta,
  PickStringInputSchema,
  PutBlobAckSchema,
  PutBlobEnvelopeSchema,
  PutBlobFinalAckSchema,
  PutBlobReqSchema,
  PutBlobRetSchema,
  readServerToolMeta,
  resolvePickString,
  sanitizeNameHint,
  UPLOAD_DEFAULTS,
  UPLOAD_ID_PATTERN,
} from "../../protocol/index.ts";

const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const id = "0123456789abcdef0123456789abcdef";
const base = { agent: "a", req_id: "r-1", computer: "c-1" };

void test("client:put_blob is a routed client:* event; the relay checks its envelope only", () => {
  assert.equal(Events.PutBlob, "client:put_blob");
  assert.ok((CLIENT_EVENTS as readonly string[]).includes("client:put_blob"));
  assert.equal(CLIENT_REQUEST_SCHEMAS[Events.PutBlob], PutBlobEnvelopeSchema);
  // A bad declaration is the store's 4019 invalid_declaration, not the relay's 400.
  const odd = { ...base, chunk_offset: 0, eof: true, total_size: true, blob: 7 };
  assert.ok(PutBlobEnvelopeSchema.safeParse(odd).success);
  assert.equal(PutBlobEnvelopeSchema.safeParse({ ...odd, agent: "" }).success, false);
});

void test("PutBlobReq: a first chunk declares, later chunks do not", () => {
  const first = { ...base, chunk_offset: 0, eof: false, total_size: 10, sha256: sha, blob: "" };
  assert.ok(PutBlobReqSchema.safeParse(first).success);
  assert.ok(PutBlobReqSchema.safeParse({ ...first, upload_id: null, name_hint: "f.bin" }).success);
  assert.equal(PutBlobReqSchema.safeParse({ ...first, total_size: 0 }).success, false);
  assert.equal(PutBlobReqSchema.safeParse({ ...first, sha256: sha.toUpperCase() }).success, false);
  assert.equal(PutBlobReqSchema.safeParse({ ...first, sha256: undefined }).success, false);
  const later = { ...base, upload_id: id, chunk_offset: 4, eof: true, blob: "AAAA" };
  assert.ok(PutBlobReqSchema.safeParse(later).success);
  assert.ok(PutBlobReqSchema.safeParse({ ...later, blob: Buffer.from([1, 2, 3]) }).success);
  assert.ok(PutBlobReqSchema.safeParse({ ...later, blob_format: "binary" }).success);
  for (const late of [{ total_size: 8 }, { sha256: sha }, { name_hint: "x" }]) {
    assert.equal(PutBlobReqSchema.safeParse({ ...later, ...late }).success, false);
  }
  assert.equal(PutBlobReqSchema.safeParse({ ...later, chunk_offset: -1 }).success, false);
  assert.equal(PutBlobReqSchema.safeParse({ ...later, eof: "yes" }).success, false);
});

void test("PutBlobRet: exact key sets, the binary offer the only extra key", () => {
  const ack = { chunk_offset: 0, req_id: "r-1", upload_id: id };
  const final = { ...ack, landing_path: `/land/${id}`, sha256: sha, total_size: 10 };
  assert.ok(PutBlobAckSchema.safeParse(ack).success);
  assert.ok(PutBlobAckSchema.safeParse({ ...ack, blob_format: "binary" }).success);
  assert.equal(PutBlobAckSchema.safeParse({ ...ack, landing_path: "/x" }).success, false);
  assert.equal(PutBlobAckSchema.safeParse({ ...ack, extra: 1 }).success, false);
  assert.ok(PutBlobFinalAckSchema.safeParse(final).success);
  assert.ok(PutBlobFinalAckSchema.safeParse({ ...final, blob_format: "binary" }).success);
  assert.equal(PutBlobFinalAckSchema.safeParse({ ...final, landing_path: "" }).success, false);
  assert.equal(PutBlobFinalAckSchema.safeParse({ ...final, extra: 1 }).success, false);
  assert.ok(PutBlobRetSchema.safeParse(ack).success);
  assert.ok(PutBlobRetSchema.safeParse(final).success);
  assert.deepEqual(Object.keys(PutBlobAckSchema.shape).sort(), [
    "blob_format",
    "chunk_offset",
    "req_id",
    "upload_id",
  ]);
  assert.match(id, UPLOAD_ID_PATTERN);
  assert.doesNotMatch(id.toUpperCase(), UPLOAD_ID_PATTERN);
});

void test("upstream's upload defaults", () => {
  assert.deepEqual(UPLOAD_DEFAULTS, {
    idleTimeoutSeconds: 120,
    maxConcurrent: 4,
    maxBytes: 100 * 1024 * 1024,
    chunkBytes: 256 * 1024,
  });
});

void test("name_hint sanitizer: upstream's vectors", () => {
  const vectors: [unknown, string][] = [
    [undefined, ""],
    [null, ""],
    ["", ""],
    ["../..", ""],
    ["report v1.pdf", "report_v1.pdf"],
    ["a/b/c.txt", "a_b_c.txt"],
    ["..start", "start"],
    ["../../etc/passwd", "etc_passwd"],
    ["  spaced name  ", "spaced_name"],
    ["..x.y-..", "x.y"],
    ["a".repeat(100), "a".repeat(64)],
    ["x".repeat(200), "x".repeat(64)],
  ];
  for (const [hint, want] of vectors) assert.equal(sanitizeNameHint(hint), want, String(hint));
  assert.equal(landingName(id, "../../etc/passwd"), `${id}_etc_passwd`);
  assert.equal(landingName(id, undefined), id);
});

void test("A2CSkillRef.tags: a list of strings, optional", () => {
  const ref = { name: "s", source: "user", path: "/p", description: "d" };
  assert.ok(A2CSkillRefSchema.safeParse(ref).success);
  assert.ok(A2CSkillRefSchema.safeParse({ ...ref, tags: ["a", "b"] }).success);
  assert.equal(A2CSkillRefSchema.safeParse({ ...ref, tags: "a" }).success, false);
});

void test("ToolMeta: tool over default over server; tags replace whole; [] clears", () => {
  const server = { tags: ["s1", "s2"] };
  assert.deepEqual(mergeToolMeta(undefined, undefined, server), {
    auto_apply: null,
    alias: null,
    tags: ["s1", "s2"],
    ret_object_mapper: null,
  });
  assert.deepEqual(mergeToolMeta(undefined, { tags: ["d"] }, server).tags, ["d"]);
  assert.deepEqual(mergeToolMeta({ tags: ["t"] }, { tags: ["d"] }, server).tags, ["t"]);
  assert.deepEqual(mergeToolMeta({ tags: [] }, { tags: ["d"] }, server).tags, []);
  assert.deepEqual(mergeToolMeta({ tags: null }, undefined, server).tags, ["s1", "s2"]);
  assert.equal(mergeToolMeta({ alias: "x" }, { alias: "y", auto_apply: true }, {}).alias, "x");
  // Only tags is taken from a server declaration; malformed ones are refused, not thrown.
  assert.deepEqual(readServerToolMeta({ tags: ["a"], auto_apply: true, alias: "evil" }), {
    ok: true,
    layer: { tags: ["a"] },
  });
  assert.deepEqual(readServerToolMeta(undefined), { ok: true, layer: {} });
  assert.deepEqual(readServerToolMeta({ tags: [1] }), { ok: false });
  assert.deepEqual(readServerToolMeta("tags"), { ok: false });
});

void test("pickString options are [{label, value}]; the old string[] is refused by name", () => {
  const input = {
    id: "region",
    type: "pickString",
    options: [
      { label: "Europe", value: "eu" },
      { label: "Europe (again)", value: "eu" },
      { label: "US", value: "us" },
    ],
    default: "us",
  };
  const parsed = PickStringInputSchema.parse(input);
  assert.ok(PickStringInputSchema.safeParse({ ...input, default: null }).success);
  assert.equal(PickStringInputSchema.safeParse({ ...input, default: "asia" }).success, false);
  assert.equal(PickStringInputSchema.safeParse({ ...input, options: [] }).success, false);
  assert.equal(
    PickStringInputSchema.safeParse({ ...input, options: [{ label: "", value: "x" }] }).success,
    false,
  );
  const old = PickStringInputSchema.safeParse({ ...input, options: ["eu", "us"], default: "eu" });
  assert.equal(old.success, false);
  assert.match(JSON.stringify(old.error?.issues), /\[\{label, value\}\]/);
  assert.deepEqual(resolvePickString(parsed, "eu"), { ok: true, value: "eu" });
  assert.deepEqual(resolvePickString(parsed, undefined), { ok: true, value: "us" });
  assert.equal(resolvePickString(parsed, "asia").ok, false);
  const noDefault = PickStringInputSchema.parse({ ...input, default: undefined });
  assert.deepEqual(resolvePickString(noDefault, undefined), { ok: true, value: "eu" });
});
