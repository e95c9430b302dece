/**
 * The Agent's side of `client:put_blob` against a scripted Computer (a real socket.io Server on
 * port 0 playing relay and Computer), upstream's Agent pump cases (the reference SDKs' own list)
 * plus ours: what each chunk carries, the checks before anything is sent, the typed error of each
 * answer, binary carriage only when offered, a Server `busy` rewound within the session, a 4019
 * `busy` restarted from 0, and abort.
 */
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import {
  BlobWriteError,
  InvalidUploadError,
  ProtocolError,
  RequestTimeoutError,
  UploadBusyError,
  UploadError,
  UploadUnsupportedError,
} from "../../agent/errors.ts";
import { DEFAULT_BASE64_UPLOAD_CHUNK_BYTES } from "../../agent/upload.ts";
import {
  COMPUTER,
  NO_ANSWER,
  type FakeServer,
  sha256,
  testBytes,
  useFakeComputer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});

const EVENT = "client:put_blob";
const puts = (): Record<string, unknown>[] =>
  fake.received.filter((r) => r.event === EVENT).map((r) => r.payload);
const bytesOf = (blob: unknown): Buffer =>
  typeof blob === "string" ? Buffer.from(blob, "base64") : Buffer.from(blob as Uint8Array);

/**
 * A well-behaved store for one upload at a time: in-order offsets (`range` otherwise, the
 * session kept), the final ack with the six keys. `tweak` may answer a request its own way.
 */
function store(
  opts: {
    offerBinary?: boolean;
    tweak?: (req: Record<string, unknown>, n: number) => unknown;
  } = {},
): { stored: () => Buffer } {
  let parts: Buffer[] = [];
  let received = 0;
  let n = 0;
  fake.received.length = 0;
  fake.on(EVENT, (req) => {
    const own = opts.tweak?.(req, n++);
    if (own !== undefined) return own;
    if (req.upload_id === undefined) {
      parts = [];
      received = 0;
    }
    if (req.chunk_offset !== received) {
      return { code: 4019, message: "chunk_offset does not match", details: { reason: "range" } };
    }
    const b = bytesOf(req.blob);
    parts.push(b);
    received += b.length;
    const ack: Record<string, unknown> = {
      chunk_offset: req.chunk_offset,
      req_id: req.req_id,
      upload_id: "uid-1",
    };
    if (opts.offerBinary && req.blob_format !== undefined) ack.blob_format = "binary";
    if (!req.eof) return ack;
    return {
      ...ack,
      landing_path: "/landing/uid-1_f.bin",
      sha256: sha256(Buffer.concat(parts)),
      total_size: received,
    };
  });
  return { stored: () => Buffer.concat(parts) };
}

void test("10 bytes in chunks of 4: three requests, the declaration on the first only", async () => {
  const data = testBytes(10);
  const s = store();
  const r = await agent.uploadBlob(COMPUTER, data, { nameHint: "f.bin", chunkBytes: 4 });
  const p = puts();
  assert.equal(p.length, 3);
  assert.deepEqual(
    p.map((x) => [x.upload_id, x.chunk_offset, x.eof]),
    [
      [undefined, 0, false],
      ["uid-1", 4, false],
      ["uid-1", 8, true],
    ],
  );
  assert.equal(p[0]!.total_size, 10);
  assert.equal(p[0]!.sha256, sha256(data));
  assert.equal(p[0]!.name_hint, "f.bin");
  for (const later of p.slice(1)) {
    for (const k of ["total_size", "sha256", "name_hint"]) assert.ok(!(k in later), k);
  }
  assert.ok(s.stored().equals(data));
  assert.deepEqual(
    { landingPath: r.landingPath, totalSize: r.totalSize, sha256: r.sha256 },
    { landingPath: "/landing/uid-1_f.bin", totalSize: 10, sha256: sha256(data) },
  );
});

void test("a single chunk is one request with eof; no hint sends no name_hint", async () => {
  store();
  await agent.uploadBlob(COMPUTER, testBytes(1));
  const p = puts();
  assert.equal(p.length, 1);
  assert.equal(p[0]!.eof, true);
  assert.ok(!("name_hint" in p[0]!));
});

void test("checked before sending: an empty source, a chunk size below 1", async () => {
  store();
  await assert.rejects(agent.uploadBlob(COMPUTER, Buffer.alloc(0)), {
    name: "UploadError",
    reason: "empty_payload",
  });
  for (const chunkBytes of [0, -1]) {
    await assert.rejects(agent.uploadBlob(COMPUTER, testBytes(5), { chunkBytes }), {
      reason: "bad_chunk_size",
    });
  }
  assert.equal(puts().length, 0);
});

void test("binary carriage only when the Computer offers it; binary: false never asks", async () => {
  const data = testBytes(100_000, 3);
  store({ offerBinary: true });
  const offered = await agent.uploadBlob(COMPUTER, data, { chunkBytes: 30_000 });
  let p = puts();
  assert.equal(p[0]!.blob_format, "base64");
  assert.equal(typeof p[0]!.blob, "string");
  for (const later of p.slice(1)) {
    assert.equal(later.blob_format, "binary");
    assert.ok(Buffer.isBuffer(later.blob));
  }
  assert.equal(offered.carriage, "binary");

  store({ offerBinary: false });
  const plain = await agent.uploadBlob(COMPUTER, data, { chunkBytes: 30_000 });
  assert.ok(puts().every((x) => typeof x.blob === "string"));
  assert.equal(plain.carriage, "base64");

  store({ offerBinary: true });
  await agent.uploadBlob(COMPUTER, data, { chunkBytes: 30_000, binary: false });
  p = puts();
  assert.ok(p.every((x) => typeof x.blob === "string" && !("blob_format" in x)));
});

void test("a first chunk that asks for binary keeps to the base64 default, whatever the ceiling", async () => {
  const data = testBytes(400_000, 4);
  const s = store({ offerBinary: true });
  await agent.uploadBlob(COMPUTER, data, { chunkBytes: 300_000 });
  const p = puts();
  assert.ok(bytesOf(p[0]!.blob).length <= DEFAULT_BASE64_UPLOAD_CHUNK_BYTES);
  assert.ok(p.slice(1).some((x) => bytesOf(x.blob).length > DEFAULT_BASE64_UPLOAD_CHUNK_BYTES));
  assert.ok(s.stored().equals(data));
});

void test("a stream is spooled and hashed first, then sent", async () => {
  const data = testBytes(50_000, 9);
  const s = store();
  const chunks = [data.subarray(0, 1000), data.subarray(1000, 20_000), data.subarray(20_000)];
  const r = await agent.uploadBlob(COMPUTER, Readable.from(chunks), { chunkBytes: 16_384 });
  assert.equal(puts()[0]!.sha256, sha256(data));
  assert.ok(s.stored().equals(data));
  assert.equal(r.totalSize, data.length);
});

void test("answers become typed errors", async () => {
  const data = testBytes(10);
  const answer = (a: unknown): void => void store({ tweak: () => a });
  answer({ code: 4019, message: "too many concurrent uploads", details: { reason: "busy" } });
  await assert.rejects(agent.uploadBlob(COMPUTER, data, { busyRetries: 0 }), (e) => {
    assert.ok(e instanceof UploadBusyError);
    return e.reason === "busy";
  });
  answer({ code: 4019, message: "no reason" });
  await assert.rejects(agent.uploadBlob(COMPUTER, data, { retries: 0 }), (e) => {
    assert.ok(e instanceof InvalidUploadError);
    return e.reason === "invalid_upload";
  });
  answer({ code: 4019, message: "new", details: { reason: "quota_exceeded" } });
  await assert.rejects(agent.uploadBlob(COMPUTER, data), (e) => {
    assert.equal(e?.constructor, BlobWriteError, "an unknown reason stays the generic class");
    return (e as BlobWriteError).reason === "quota_exceeded";
  });
  answer({ code: 4008, message: "Protocol version mismatch" });
  await assert.rejects(agent.uploadBlob(COMPUTER, data), (e) => {
    assert.ok(e instanceof ProtocolError);
    return e.code === 4008;
  });
  answer({ code: 404, message: "Event not supported", details: { reason: "unknown_event" } });
  await assert.rejects(agent.uploadBlob(COMPUTER, data), UploadUnsupportedError);
});

void test("the final ack: another digest is echo_mismatch, no landing_path incomplete_ack", async () => {
  const data = testBytes(10);
  const final = (extra: Record<string, unknown>, drop?: string) =>
    store({
      tweak: (req) => {
        const ack: Record<string, unknown> = {
          chunk_offset: req.chunk_offset,
          landing_path: "/l/x",
          req_id: req.req_id,
          sha256: sha256(data),
          total_size: 10,
          upload_id: "uid-1",
          ...extra,
        };
        if (drop) delete ack[drop];
        return ack;
      },
    });
  final({ sha256: "0".repeat(64) });
  await assert.rejects(agent.uploadBlob(COMPUTER, data), { reason: "echo_mismatch" });
  final({}, "landing_path");
  await assert.rejects(agent.uploadBlob(COMPUTER, data), { reason: "incomplete_ack" });
  // An echo without size and sha256 falls back to the declared values.
  final({}, "sha256");
  const r = await agent.uploadBlob(COMPUTER, data);
  assert.equal(r.sha256, sha256(data));
});

void test("no answer to the first chunk: unsupported; to a later one: the timeout", async () => {
  const data = testBytes(10);
  store({ tweak: () => NO_ANSWER });
  await assert.rejects(
    agent.uploadBlob(COMPUTER, data, { timeoutMs: 200, nameHint: "f.bin" }),
    (e) => {
      assert.ok(e instanceof UploadUnsupportedError);
      // What it would have declared stays with the caller (upstream's error carries it too).
      assert.deepEqual([e.totalSize, e.sha256, e.nameHint], [10, sha256(data), "f.bin"]);
      return e.cause instanceof RequestTimeoutError;
    },
  );
  store({ tweak: (_req, n) => (n >= 1 ? NO_ANSWER : undefined) });
  await assert.rejects(
    agent.uploadBlob(COMPUTER, data, { chunkBytes: 4, timeoutMs: 200, retries: 0 }),
    RequestTimeoutError,
  );
});

void test("a chunk the Server refused as busy is sent again within the session", async () => {
  const data = testBytes(40, 5);
  let refused = false;
  const s = store({
    tweak: (req) => {
      if (req.chunk_offset !== 8 || refused) return undefined;
      refused = true;
      return { code: 500, message: "busy", details: { reason: "busy" } };
    },
  });
  const r = await agent.uploadBlob(COMPUTER, data, { chunkBytes: 4, window: 4 });
  assert.ok(s.stored().equals(data));
  assert.equal(r.stats.rewinds, 1);
  assert.equal(r.stats.restarts, 0);
  assert.equal(puts().filter((x) => x.upload_id === undefined).length, 1, "one session");
});

void test("4019 busy backs off and sends again from offset 0", async () => {
  const data = testBytes(12, 6);
  let busy = true;
  const s = store({
    tweak: () => {
      if (!busy) return undefined;
      busy = false;
      return { code: 4019, message: "too many concurrent uploads", details: { reason: "busy" } };
    },
  });
  const r = await agent.uploadBlob(COMPUTER, data, { chunkBytes: 4 });
  assert.ok(s.stored().equals(data));
  assert.equal(r.stats.restarts, 1);
  assert.equal(puts().filter((x) => x.upload_id === undefined).length, 2);
});

void test("abort mid-upload rejects at once with the signal's reason", async () => {
  const stop = new AbortController();
  store({
    tweak: (req, n) => {
      if (n === 1) setImmediate(() => stop.abort(new Error("stop now")));
      return n >= 1 ? NO_ANSWER : undefined;
    },
  });
  await assert.rejects(
    agent.uploadBlob(COMPUTER, testBytes(100), { chunkBytes: 10, signal: stop.signal }),
    /stop now/,
  );
});

void test("UploadError carries a stable code", () => {
  const e = new UploadError("echo_mismatch", "x");
  assert.equal(e.code, "UPLOAD_ECHO_MISMATCH");
});
