/**
 * A Computer that lies, with the SDK as its victim (a scripted Computer on a real socket.io
 * Server): sizes no destination can hold, sizes that disagree with the producer, a size that
 * keeps changing, and a sideband beyond the in-memory bound. Each ends in a typed error decided
 * from the sizes (D45), before the bytes it claims are allocated or even asked for, so the
 * victim's memory does not grow with the lie.
 */
import assert from "node:assert/strict";
import { constants as bufferConstants } from "node:buffer";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { BlobChangedError, BlobTooLargeError, SidebandRestoreError } from "../../agent/errors.ts";
import { DEFAULT_MAX_IN_MEMORY_BYTES } from "../../agent/pull.ts";
import {
  answerFor,
  COMPUTER,
  type FakeServer,
  sha256,
  skillAnswer,
  testBytes,
  useFakeComputer,
  useTempDir,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
let dir: string;

useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});
useTempDir("agent-hostile-", (d) => (dir = d));

const bytes = testBytes(64 * 1024, 1);

/** A Computer that serves `bytes` but claims `total` (and a digest of nothing it serves). */
function claims(total: number): void {
  fake.on("client:get_blob", (req) => {
    const a = answerFor(bytes, req, { total });
    // answerFor clamps to the bytes it has: a chunk of the claimed blob, never its end.
    return { ...a, eof: false };
  });
}

/** The bytes the process holds in ArrayBuffers (Buffers) right now, after a collection. */
function heldBuffers(): number {
  globalThis.gc?.();
  return process.memoryUsage().arrayBuffers;
}

function requestsDuring(fn: () => Promise<unknown>): Promise<number> {
  const n = fake.blobRequests().length;
  return fn().then(
    () => fake.blobRequests().length - n,
    () => fake.blobRequests().length - n,
  );
}

const HUGE = [
  ["over the in-memory bound", DEFAULT_MAX_IN_MEMORY_BYTES + 1, "limit"],
  ["over what one Buffer holds", bufferConstants.MAX_LENGTH + 1, "limit"],
  ["not a safe integer", 2 ** 60, "limit"],
] as const;

for (const [what, total, reason] of HUGE) {
  void test(`readBlob of a size ${what}: BlobTooLargeError after one request, nothing allocated`, async () => {
    claims(total);
    const held = heldBuffers();
    let err: unknown;
    const asked = await requestsDuring(() =>
      agent.readBlob(COMPUTER, "huge").catch((e: unknown) => {
        err = e;
        throw e;
      }),
    );
    assert.ok(err instanceof BlobTooLargeError, String(err));
    assert.equal(err.reason, reason);
    assert.equal(err.totalSize, total);
    assert.equal(asked, 1, "only the chunk that named the size");
    assert.ok(heldBuffers() - held < 16 * 1024 * 1024, "the claimed size was never allocated");
  });
}

void test("readBlob with maxBytes raised past one Buffer: BlobTooLargeError (buffer)", async () => {
  claims(bufferConstants.MAX_LENGTH + 1);
  await assert.rejects(
    agent.readBlob(COMPUTER, "huge", { maxBytes: Number.MAX_SAFE_INTEGER }),
    (err: unknown) => err instanceof BlobTooLargeError && err.reason === "buffer",
  );
});

void test("downloadBlob of a size that is not a safe integer: BlobTooLargeError (file), no file", async () => {
  claims(2 ** 60);
  const path = join(dir, "never.bin");
  await assert.rejects(
    agent.downloadBlob(COMPUTER, "huge", path),
    (err: unknown) => err instanceof BlobTooLargeError && err.reason === "file",
  );
  assert.deepEqual(await readdir(dir), [], "no file and no temp file");
});

void test("get_skill names a small text, get_blob a huge one: BlobChangedError, nothing allocated", async () => {
  const text = Buffer.from("# a small skill\n".repeat(4000));
  fake.on("client:get_skill", (req) =>
    skillAnswer(req, text, { mime: "text/markdown", handle: "text-1" }),
  );
  claims(200 * 1024 * 1024);
  const held = heldBuffers();
  await assert.rejects(agent.getSkill(COMPUTER, "s", "notes.md"), BlobChangedError);
  assert.ok(heldBuffers() - held < 16 * 1024 * 1024);
});

void test("get_skill names a text over the bound: BlobTooLargeError before any get_blob", async () => {
  fake.on("client:get_skill", (req) =>
    skillAnswer(req, Buffer.from("x"), {
      mime: "text/markdown",
      handle: "text-2",
      total: DEFAULT_MAX_IN_MEMORY_BYTES + 1,
    }),
  );
  const asked = await requestsDuring(() =>
    assert.rejects(agent.getSkill(COMPUTER, "s", "big.md"), BlobTooLargeError),
  );
  assert.equal(asked, 0);
  // A caller that expects it raises the bound (and then the pull runs as usual).
  const small = Buffer.from("fits now");
  fake.on("client:get_skill", (req) =>
    skillAnswer(req, small, { mime: "text/markdown", handle: "text-3" }),
  );
  fake.on("client:get_blob", (req) => answerFor(small, req));
  const ret = await agent.getSkill(COMPUTER, "s", "small.md", { pull: { maxBytes: 8 } });
  assert.equal(ret.body, "fits now");
});

void test("a size that changes on every read: BlobChangedError after the bounded re-reads", async () => {
  let version = 0;
  fake.on("client:get_blob", (req) => {
    // Every answer claims a larger blob than the last one: a read never sees two alike.
    const a = answerFor(bytes, req, { total: bytes.length + ++version });
    return { ...a, eof: false };
  });
  const asked = await requestsDuring(() =>
    assert.rejects(agent.readBlob(COMPUTER, "shifty", { rereads: 2 }), BlobChangedError),
  );
  assert.ok(asked <= 3 * 16 + 3, `${asked} requests`);
});

void test("a sideband item over the in-memory bound: SidebandRestoreError before any pull", async () => {
  const item = (handle: string, size: number): Record<string, unknown> => ({
    type: "image",
    data: "",
    mimeType: "image/png",
    _meta: { a2c_blob_handle: handle, a2c_total_size: size, a2c_sha256: sha256(bytes) },
  });
  for (const content of [
    [item("one", 8 * 1024 * 1024 * 1024)],
    // Each under the bound, together over it: they would all be held at once.
    [item("a", 100 * 1024 * 1024), item("b", 100 * 1024 * 1024), item("c", 100 * 1024 * 1024)],
  ]) {
    fake.on("client:tool_call", () => ({ content }));
    const asked = await requestsDuring(() =>
      assert.rejects(
        agent.callTool(COMPUTER, "t"),
        (err: unknown) =>
          err instanceof SidebandRestoreError && err.cause instanceof BlobTooLargeError,
      ),
    );
    assert.equal(asked, 0);
  }
});
