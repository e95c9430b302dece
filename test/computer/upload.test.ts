// @both-transports
/**
 * `client:put_blob` against real Computers through a real Server: upstream's conformance cases
 * (python-sdk test_upload.py, rust-sdk upload.rs and put_blob_boundary_test.rs) that apply to a
 * Computer or the relay, each with upstream's inputs and outcome (docs/protocol.md,
 * "client:put_blob"). Several Computers in one office, each with the bounds its cases need.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import {
  PutBlobAckSchema,
  PutBlobFinalAckSchema,
  UPLOAD_ID_PATTERN,
} from "../../protocol/index.ts";
import { ServerHarness, type Socket } from "../support/server-harness.ts";
import { sha256Hex, UploadDriver, type Answer } from "../support/upload-driver.ts";
import { startHarnessComputer } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-upload-"));
const roots = {
  main: join(dir, "land-main"),
  cap: join(dir, "land-cap"),
  idle: join(dir, "land-idle"),
  // The root's parent is a regular file: nothing can be created under it.
  blocked: join(dir, "a-file", "land"),
};
let h: ServerHarness;
let agent: Socket;
const computers: RunningComputer[] = [];
const up: Record<"main" | "none" | "cap" | "idle" | "blocked", UploadDriver> = {} as never;

before(async () => {
  writeFileSync(join(dir, "a-file"), "x");
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  const start = async (
    key: keyof typeof up,
    extra: Parameters<typeof startHarnessComputer>[2],
  ): Promise<void> => {
    const name = `pc-${key}`;
    const pc = await startHarnessComputer(h, join(dir, key), { name, services: [], ...extra });
    computers.push(pc);
    up[key] = new UploadDriver(agent, "agent-1", name);
  };
  await start("main", {
    landingRoot: roots.main,
    upload: { maxBytes: 4 * 1024 * 1024, maxConcurrent: 64 },
  });
  await start("none", {});
  await start("cap", { landingRoot: roots.cap, upload: { maxBytes: 16, maxConcurrent: 1 } });
  await start("idle", { landingRoot: roots.idle, upload: { idleTimeoutMs: 150 } });
  await start("blocked", { landingRoot: roots.blocked });
});

after(async () => {
  await Promise.all(computers.map((pc) => pc.close()));
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

const partDir = (root: string): string => join(root, ".a2c-upload");
const parts = (root: string): string[] =>
  existsSync(partDir(root)) ? readdirSync(partDir(root)) : [];
const reason = (a: Answer): unknown => (a.details as { reason?: unknown } | undefined)?.reason;

function assertError(a: Answer, why: string, message?: string): void {
  assert.equal(a.code, 4019, JSON.stringify(a));
  assert.equal(reason(a), why, JSON.stringify(a));
  if (message !== undefined) assert.equal(a.message, message);
}

/** Resolves once `check()` holds (a background step of the Computer), failing after 10 s. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within 10 s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// ---- happy path --------------------------------------------------------------------------

void test("a non-final first chunk: exactly {chunk_offset, req_id, upload_id}, id of 32 hex", async () => {
  const bytes = randomBytes(8);
  const ack = await up.main.begin(bytes, 4);
  assert.deepEqual(Object.keys(ack).sort(), ["chunk_offset", "req_id", "upload_id"]);
  assert.equal(ack.chunk_offset, 0);
  assert.match(ack.upload_id as string, UPLOAD_ID_PATTERN);
  assert.ok(PutBlobAckSchema.safeParse(ack).success);
});

void test("10,240 B in 256 B chunks over socket.io: six-key final ack, bytes equal, no .part left", async () => {
  const bytes = randomBytes(10_240);
  const { acks, final } = await up.main.upload(bytes, { chunkSize: 256 });
  assert.equal(acks.length, 40);
  acks.forEach((a, i) => {
    assert.equal(a.chunk_offset, i * 256);
    assert.equal(a.upload_id, acks[0]!.upload_id);
  });
  for (const a of acks.slice(0, -1)) {
    assert.deepEqual(Object.keys(a).sort(), ["chunk_offset", "req_id", "upload_id"]);
  }
  assert.deepEqual(Object.keys(final).sort(), [
    "chunk_offset",
    "landing_path",
    "req_id",
    "sha256",
    "total_size",
    "upload_id",
  ]);
  assert.ok(PutBlobFinalAckSchema.safeParse(final).success);
  assert.equal(final.total_size, 10_240);
  assert.equal(final.sha256, sha256Hex(bytes));
  const path = final.landing_path as string;
  assert.ok(path.startsWith(roots.main + "/"), path);
  assert.equal(path, join(roots.main, final.upload_id as string));
  assert.deepEqual(readFileSync(path), bytes);
  assert.deepEqual(
    parts(roots.main).filter((p) => p.includes(final.upload_id as string)),
    [],
  );
});

void test("one eof chunk is a whole upload; a name_hint is sanitized behind the id", async () => {
  const bytes = randomBytes(100);
  const ack = await up.main.begin(bytes, 100, { name_hint: "../../etc/passwd" });
  const path = ack.landing_path as string;
  const name = path.slice(roots.main.length + 1);
  assert.equal(name, `${ack.upload_id as string}_etc_passwd`);
  assert.ok(!name.includes("/") && !name.includes(".."));
  assert.deepEqual(readFileSync(path), bytes);
  const plain = await up.main.begin(bytes, 100);
  assert.equal(plain.landing_path, join(roots.main, plain.upload_id as string));
});

void test("an empty final chunk at offset = total_size is legal", async () => {
  const bytes = randomBytes(10);
  const first = await up.main.begin(bytes, 10, { eof: false });
  const final = await up.main.next(first.upload_id as string, bytes, 10, 0);
  assert.equal(final.total_size, 10);
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
});

// ---- forbidden -----------------------------------------------------------------------------

void test("forbidden: no landing root configured (nothing written)", async () => {
  const a = await up.none.begin(randomBytes(4), 4);
  assertError(a, "forbidden", "landing root not configured");
});

void test("forbidden: the landing root cannot be created (its parent is a regular file)", async () => {
  const a = await up.blocked.begin(randomBytes(4), 4);
  assertError(a, "forbidden", "landing root not writable");
  // The slot it took is given back: the next attempt is refused the same way, not busy.
  assertError(await up.blocked.begin(randomBytes(4), 4), "forbidden");
});

// ---- invalid_declaration -------------------------------------------------------------------

void test("invalid_declaration on the first chunk: total_size missing, 0, true; sha256 missing or malformed", async () => {
  const bytes = randomBytes(4);
  const sha = sha256Hex(bytes);
  const blob = bytes.toString("base64");
  const base = { chunk_offset: 0, eof: true, blob };
  const size = "total_size must be an int >= 1";
  const digest = "sha256 must be a 64-char hex string";
  for (const [fields, message] of [
    [{ sha256: sha }, size],
    [{ sha256: sha, total_size: 0 }, size],
    [{ sha256: sha, total_size: true }, size],
    [{ sha256: sha, total_size: 1.5 }, size],
    [{ total_size: 4 }, digest],
    [{ total_size: 4, sha256: "zz" }, digest],
    [{ total_size: 4, sha256: "A".repeat(64) }, digest],
    [{ total_size: 4, sha256: "abc" }, digest],
    [{ total_size: 4, sha256: "g".repeat(64) }, digest],
  ] as const) {
    assertError(await up.main.chunk({ ...base, ...fields }), "invalid_declaration", message);
  }
});

void test("invalid_declaration, session kept: sha256 or total_size re-sent on a later chunk", async () => {
  const bytes = randomBytes(12);
  const first = await up.main.begin(bytes, 4);
  const id = first.upload_id as string;
  const late = "declaration fields must only appear on the first chunk";
  assertError(
    await up.main.next(id, bytes, 4, 4, { sha256: sha256Hex(bytes) }),
    "invalid_declaration",
    late,
  );
  assertError(await up.main.next(id, bytes, 4, 4, { total_size: 12 }), "invalid_declaration", late);
  assertError(await up.main.next(id, bytes, 4, 4, { name_hint: "x" }), "invalid_declaration", late);
  assert.equal((await up.main.next(id, bytes, 4, 4)).chunk_offset, 4);
  const final = await up.main.next(id, bytes, 8, 4);
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
});

void test("invalid_declaration, session kept: blob not base64, or not a string", async () => {
  const bytes = randomBytes(8);
  const first = await up.main.begin(bytes, 4);
  const id = first.upload_id as string;
  const bad = await up.main.next(id, bytes, 4, 4, { blob: "!!!not-base64!!!" });
  assertError(bad, "invalid_declaration", "blob is not valid base64");
  assert.equal((bad.details as { upload_id?: unknown }).upload_id, id);
  assertError(await up.main.next(id, bytes, 4, 4, { blob: 12345 }), "invalid_declaration");
  assertError(await up.main.next(id, bytes, 4, 4, { blob: "AA-_" }), "invalid_declaration");
  const final = await up.main.next(id, bytes, 4, 4);
  assert.equal(final.sha256, sha256Hex(bytes));
});

// ---- too_large, busy -----------------------------------------------------------------------

void test("too_large: cap 16, declared 17; nothing created, not even .a2c-upload; 16 is accepted", async () => {
  const a = await up.cap.begin(randomBytes(17), 1);
  assertError(a, "too_large", "declared total_size exceeds the upload cap");
  assert.equal((a.details as { total_size?: unknown }).total_size, 17);
  assert.equal(existsSync(roots.cap), false);
  // A declaration no file could have is too large, not malformed (upstream compares integers).
  const huge = await up.cap.chunk({
    chunk_offset: 0,
    eof: true,
    total_size: 2 ** 60,
    sha256: "0".repeat(64),
    blob: "",
  });
  assertError(huge, "too_large");
  const ok = await up.cap.begin(randomBytes(16), 16);
  assert.equal(ok.total_size, 16);
});

void test("busy: cap 1, a second first chunk while one is open; accepted again once it finished", async () => {
  const bytes = randomBytes(8);
  const open = await up.cap.begin(bytes, 4);
  const refused = await up.cap.begin(randomBytes(8), 4);
  assert.equal(
    JSON.stringify(refused),
    '{"code":4019,"message":"too many concurrent uploads","details":{"reason":"busy"}}',
  );
  await up.cap.next(open.upload_id as string, bytes, 4, 4);
  const again = await up.cap.begin(randomBytes(8), 8);
  assert.equal(again.total_size, 8);
});

// ---- invalid_upload --------------------------------------------------------------------------

void test('invalid_upload: an unknown id, and "" (present, so a later chunk)', async () => {
  const bytes = randomBytes(4);
  for (const id of ["f".repeat(32), ""]) {
    const a = await up.main.next(id, bytes, 0, 4);
    assertError(a, "invalid_upload", "unknown or expired upload session");
    assert.equal((a.details as { upload_id?: unknown }).upload_id, id);
  }
});

void test("invalid_upload: a session idle past the timeout is dropped and its .part deleted", async () => {
  const bytes = randomBytes(8);
  const first = await up.idle.begin(bytes, 4);
  const id = first.upload_id as string;
  assert.deepEqual(parts(roots.idle), [`${id}.part`]);
  await new Promise((r) => setTimeout(r, 400)); // idle timeout 150 ms: strictly past it
  assertError(await up.idle.next(id, bytes, 4, 4), "invalid_upload");
  assert.deepEqual(parts(roots.idle), []);
});

// ---- range -----------------------------------------------------------------------------------

void test("range, session kept: offset ahead of what was received; a first chunk at offset 4 or 7", async () => {
  const bytes = randomBytes(12);
  const first = await up.main.begin(bytes, 4);
  const id = first.upload_id as string;
  const gap = await up.main.next(id, bytes, 8, 4);
  assertError(gap, "range", "chunk_offset does not match received bytes");
  assert.equal((gap.details as { upload_id?: unknown }).upload_id, id);
  assertError(await up.main.next(id, bytes, 0, 4), "range"); // a chunk repeated
  for (const offset of [4, 7]) {
    assertError(await up.main.begin(bytes, 4, { chunk_offset: offset }), "range");
  }
  // Out of order kept the session: the valid chunks still finalize.
  await up.main.next(id, bytes, 4, 4);
  const final = await up.main.next(id, bytes, 8, 4);
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
});

void test("range, session kept: a final chunk that ends at 8 of a declared 12", async () => {
  const bytes = randomBytes(12);
  const first = await up.main.begin(bytes, 4);
  const id = first.upload_id as string;
  const short = await up.main.next(id, bytes, 4, 4, { eof: true });
  assertError(short, "range", "final chunk does not complete the declared total_size");
  const final = await up.main.next(id, bytes, 4, 8);
  assert.equal(final.total_size, 12);
});

void test("range, session dropped: 100 B over a declared 8; then invalid_upload and no .part", async () => {
  const bytes = randomBytes(8);
  const first = await up.main.begin(bytes, 4);
  const id = first.upload_id as string;
  const over = await up.main.chunk({
    upload_id: id,
    chunk_offset: 4,
    eof: false,
    blob: randomBytes(100).toString("base64"),
  });
  assertError(over, "range", "received bytes exceed the declared total_size");
  assertError(await up.main.next(id, bytes, 4, 4), "invalid_upload");
  assert.ok(!parts(roots.main).includes(`${id}.part`));
});

// ---- integrity -------------------------------------------------------------------------------

void test("integrity: a wrong declared sha256 stores nothing; the final chunk again is invalid_upload", async () => {
  const bytes = randomBytes(8);
  const wrong = sha256Hex(randomBytes(8));
  const first = await up.main.begin(bytes, 4, { sha256: wrong });
  const id = first.upload_id as string;
  const bad = await up.main.next(id, bytes, 4, 4);
  assertError(bad, "integrity", "sha256 mismatch; upload discarded");
  assert.equal((bad.details as { upload_id?: unknown }).upload_id, id);
  const again = await up.main.next(id, bytes, 4, 4);
  assertError(again, "invalid_upload");
  assert.equal("landing_path" in again, false);
  assert.ok(!parts(roots.main).includes(`${id}.part`));
  assert.ok(!readdirSync(roots.main).some((n) => n.startsWith(id)));
});

void test("integrity on a single chunk: only .a2c-upload is left in a fresh root", async () => {
  const bytes = randomBytes(8);
  const a = await up.idle.begin(bytes, 8, { sha256: sha256Hex(randomBytes(8)) });
  assertError(a, "integrity");
  assert.deepEqual(readdirSync(roots.idle), [".a2c-upload"]);
  assert.deepEqual(parts(roots.idle), []);
});

// ---- orphan GC -------------------------------------------------------------------------------

void test("orphans: a .part older than the idle timeout goes at the next upload; a fresh one stays", async () => {
  const old = join(partDir(roots.main), `${"a".repeat(32)}.part`);
  const fresh = join(partDir(roots.main), `${"b".repeat(32)}.part`);
  const stored = join(roots.main, "c".repeat(32));
  writeFileSync(old, "left by a crash");
  writeFileSync(fresh, "a sibling's upload");
  writeFileSync(stored, "a stored file is never collected");
  const hourAgo = new Date(Date.now() - 3600_000);
  utimesSync(old, hourAgo, hourAgo);
  utimesSync(stored, hourAgo, hourAgo);
  const ack = await up.main.begin(randomBytes(4), 4);
  assert.equal(ack.total_size, 4);
  await eventually(() => !existsSync(old), "the old .part collected");
  assert.ok(existsSync(fresh));
  assert.ok(existsSync(stored));
});

// ---- binary carriage (this stack's negotiation) -----------------------------------------------

void test("binary carriage: asked with blob_format, offered on every ack, then taken as attachments", async () => {
  const bytes = randomBytes(300_000);
  const { acks, final } = await up.main.upload(bytes, {
    chunkSize: 64 * 1024,
    binary: true,
    inFlight: 4,
  });
  assert.ok(
    acks.every((a) => a.blob_format === "binary"),
    JSON.stringify(acks[0]),
  );
  assert.ok(PutBlobFinalAckSchema.safeParse(final).success);
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
  // Without the field an ack keeps upstream's exact keys (tested above): never probed.
});

void test("pipelined chunks (8 in flight) arrive in order and store the exact bytes", async () => {
  const bytes = randomBytes(1024 * 1024 + 3);
  const { final } = await up.main.upload(bytes, { chunkSize: 32 * 1024, inFlight: 8 });
  assert.equal(final.sha256, sha256Hex(bytes));
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
});

void test("metrics: uploads stored and refused by reason, sessions open", async () => {
  const main = computers[0]!;
  const outcomes = new Map(
    (await main.metrics.uploadOutcomes.get()).values.map((v) => [v.labels.outcome, v.value]),
  );
  assert.ok((outcomes.get("stored") ?? 0) >= 8, JSON.stringify([...outcomes]));
  for (const reason of ["range", "invalid_declaration", "invalid_upload", "integrity"]) {
    assert.ok((outcomes.get(reason) ?? 0) > 0, reason);
  }
  const open = (await main.metrics.uploadSessions.get()).values[0]?.value ?? 0;
  assert.ok(open >= 1 && open <= 64, String(open)); // the first test's upload is still open
});
