/**
 * Coded chunks against a scripted Computer (docs/protocol.md §6.11; D63, D65): the SDK asks for
 * `content_encoding` by default and not with `compression: false`; a Computer that ignores the
 * field still serves; coded chunks are decoded and verified in both carriages, in parallel and
 * across a resume; and a chunk that lies about what it decodes to (longer, a bomb; shorter; more
 * than asked; a coding nobody asked for) is a `ChunkContractError`, decided without decoding more
 * than the announced size.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import {
  brotliCompressSync,
  constants as zlibConstants,
  createBrotliCompress,
  deflateSync,
  gzipSync,
} from "node:zlib";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { ChunkContractError } from "../../agent/errors.ts";
import { readBlobWithInfo } from "../../agent/pull.ts";
import {
  COMPUTER,
  answerFor,
  testBytes,
  useFakeComputer,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;
useFakeComputer(
  (f, a) => {
    fake = f;
    agent = a;
  },
  { agent: { reconnectionDelayMs: 20, reconnectionDelayMaxMs: 50 } },
);

const text = Buffer.from(
  Array.from({ length: 6000 }, (_, i) => `line ${i}: status=ok latency_ms=${i % 97}\n`).join(""),
);

type Coder = (b: Buffer) => Buffer;
const CODERS: Record<string, Coder> = {
  br: (b) => brotliCompressSync(b),
  gzip: (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
};

/** A Computer with D63: each chunk coded with the first coding asked that it knows. */
function codedAnswer(
  bytes: Buffer,
  req: Record<string, unknown>,
  lie: (answer: Record<string, unknown>, chunk: Buffer) => void = () => undefined,
): Record<string, unknown> {
  const a = answerFor(bytes, req);
  if ("code" in a) return a;
  const chunk = Buffer.isBuffer(a.blob) ? a.blob : Buffer.from(a.blob as string, "base64");
  const asked = req.content_encoding as string[] | undefined;
  const coding = asked?.find((c) => c in CODERS);
  if (asked === undefined) return a;
  const coded = coding ? CODERS[coding]!(chunk) : chunk;
  a.content_encoding = coding ?? "identity";
  a.decoded_size = chunk.length;
  a.blob = req.blob_format === "binary" ? coded : coded.toString("base64");
  lie(a, chunk);
  return a;
}

for (const binary of [true, false]) {
  const carriage = binary ? "binary" : "base64";
  void test(`coded chunks are decoded and verified, ${carriage} carriage`, async () => {
    fake.on("client:get_blob", (req) => codedAnswer(text, req));
    const n = fake.blobRequests().length;
    const { value, info } = await readBlobWithInfo(agent, COMPUTER, "coded", {
      binary,
      chunkBytes: 32 * 1024,
    });
    assert.ok(value.equals(text));
    for (const req of fake.blobRequests().slice(n)) {
      assert.deepEqual(req.content_encoding, ["br", "gzip"]);
    }
    assert.deepEqual(Object.keys(info.stats.codings), ["br"]);
    assert.equal(info.stats.bytesReceived, text.length);
    assert.ok(info.stats.wireBytes < text.length / 3, `${info.stats.wireBytes} wire bytes`);
  });
}

void test("compression: false sends no content_encoding", async () => {
  fake.on("client:get_blob", (req) => codedAnswer(text, req));
  const n = fake.blobRequests().length;
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "plain", { compression: false });
  assert.ok(value.equals(text));
  for (const req of fake.blobRequests().slice(n)) assert.equal(req.content_encoding, undefined);
  assert.deepEqual(info.stats.codings, { identity: info.stats.requests });
  assert.equal(info.stats.wireBytes, text.length);
});

void test("a Computer without the feature (no coding fields at all) still serves", async () => {
  const bytes = testBytes(100_000, 3);
  fake.on("client:get_blob", (req) => answerFor(bytes, req));
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "old", { chunkBytes: 16384 });
  assert.ok(value.equals(bytes));
  assert.deepEqual(Object.keys(info.stats.codings), ["identity"]);
});

void test("a Computer that picks gzip from the list is fine", async () => {
  fake.on("client:get_blob", (req) => codedAnswer(text, { ...req, content_encoding: ["gzip"] }));
  const { value, info } = await readBlobWithInfo(agent, COMPUTER, "gzip", {
    chunkBytes: 64 * 1024,
  });
  assert.ok(value.equals(text));
  assert.deepEqual(Object.keys(info.stats.codings), ["gzip"]);
});

void test("parallel pulls and a resume verify with coded chunks", async () => {
  const other = Buffer.from(text.toString().toUpperCase());
  let gone = false;
  fake.on("client:get_blob", (req) => {
    const bytes = req.blob_handle === "a" ? text : other;
    if (req.blob_handle === "a" && !gone && (req.chunk_offset as number) >= 100_000) {
      gone = true;
      fake.computerLeaves(COMPUTER);
    }
    if (!fake.computers.has(COMPUTER)) {
      return {
        code: 404,
        message: `Computer with name '${COMPUTER}' disconnected`,
        details: { computer_name: COMPUTER, reason: "disconnected" },
      };
    }
    return codedAnswer(bytes, req);
  });
  agent.once("computer_left", () => setImmediate(() => fake.computerEnters(COMPUTER)));
  const [a, b] = await Promise.all([
    readBlobWithInfo(agent, COMPUTER, "a", { chunkBytes: 16 * 1024, window: 4 }),
    readBlobWithInfo(agent, COMPUTER, "b", { chunkBytes: 16 * 1024, window: 4 }),
  ]);
  assert.ok(a.value.equals(text));
  assert.ok(b.value.equals(other));
  assert.ok(a.info.stats.resumes >= 1, "the first pull resumed");
  assert.deepEqual(Object.keys(a.info.stats.codings), ["br"]);
});

/** `n` zero bytes brotli-coded, streamed through the coder so they are never all in memory. */
async function zerosCoded(n: number): Promise<Buffer> {
  const coder = createBrotliCompress({ params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } });
  const parts: Buffer[] = [];
  coder.on("data", (d: Buffer) => parts.push(d));
  const ended = once(coder, "end");
  const zeros = Buffer.alloc(1024 * 1024);
  for (let sent = 0; sent < n; sent += zeros.length) {
    if (!coder.write(zeros)) await once(coder, "drain");
  }
  coder.end();
  await ended;
  return Buffer.concat(parts);
}

/** The bytes the process holds in ArrayBuffers (Buffers) right now, after a collection. */
function heldBuffers(): number {
  globalThis.gc?.();
  return process.memoryUsage().arrayBuffers;
}

/** Reads `handle` and returns the ChunkContractError it must end in. */
async function contractError(handle: string): Promise<ChunkContractError> {
  const err = await readBlobWithInfo(agent, COMPUTER, handle, { chunkBytes: 64 * 1024 }).then(
    () => assert.fail("the read was accepted"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ChunkContractError, String(err));
  return err;
}

void test("a chunk that decodes longer than announced: refused, decoding stops at the size", async () => {
  // 256 MiB of zeros coded by brotli into a few KiB, announced as a chunk of at most 64 KiB.
  const bomb = await zerosCoded(256 * 1024 * 1024);
  assert.ok(bomb.length < 64 * 1024, `bomb of ${bomb.length} bytes`);
  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a) => {
      a.blob = req.blob_format === "binary" ? bomb : bomb.toString("base64");
    }),
  );
  const held = heldBuffers();
  const started = performance.now();
  const err = await contractError("bomb");
  assert.match(err.message, /br blob decodes to more than its decoded_size/);
  assert.ok(heldBuffers() - held < 32 * 1024 * 1024, "no large allocation");
  assert.ok(performance.now() - started < 10_000, "decoding stopped early");
});

void test("a chunk that decodes shorter than announced, or more than asked: refused", async () => {
  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a, chunk) => {
      const coded = brotliCompressSync(chunk.subarray(0, chunk.length - 1));
      a.blob = req.blob_format === "binary" ? coded : coded.toString("base64");
    }),
  );
  assert.match((await contractError("short")).message, /decodes to \d+ bytes, not \d+/);

  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a) => {
      a.decoded_size = (req.max_chunk_bytes as number) + 1;
    }),
  );
  assert.match((await contractError("over")).message, /more than the \d+ asked/);

  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a) => {
      delete a.decoded_size;
    }),
  );
  assert.match((await contractError("unsized")).message, /br chunk without decoded_size/);
});

void test("a coding the request did not list, or garbage under a listed one: refused", async () => {
  fake.on("client:get_blob", (req) => codedAnswer(text, { ...req, content_encoding: ["deflate"] }));
  assert.match((await contractError("deflate")).message, /content_encoding deflate was not asked/);

  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a) => {
      a.blob = req.blob_format === "binary" ? Buffer.from("not brotli") : "bm90IGJyb3RsaQ==";
    }),
  );
  assert.match((await contractError("garbage")).message, /br blob is not valid br data/);

  fake.on("client:get_blob", (req) =>
    codedAnswer(text, req, (a) => {
      a.content_encoding = "identity";
      a.decoded_size = (a.decoded_size as number) - 1;
    }),
  );
  assert.match((await contractError("identity")).message, /decoded_size \d+ but \d+ bytes/);
});
