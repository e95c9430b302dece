/**
 * Compressed carriage at the Computer (docs/protocol.md §6.11; D63, D64): what a chunk answer
 * carries when the request names content-codings (a coded one says its coding and decoded size,
 * an identity one is the plain answer), which coding is chosen, when the Computer does
 * not compress (and spends nothing), the bound on compressions at once, the level under load, and
 * the buffer limit at its edge. Real files, the real engine, the real zlib.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants as zlibConstants,
  gunzipSync,
  inflateSync,
} from "node:zlib";
import { Encoder, PacketType } from "socket.io-parser";
import { ChunkCoder, LOAD_WINDOW_MS, negotiate } from "../../computer/blob/content-coding.ts";
import { createComputerMetrics, type ComputerMetrics } from "../../computer/metrics.ts";
import { NAMESPACE, type GetBlobRet } from "../../protocol/index.ts";
import { textContent } from "../../bench/lib/text-corpus.ts";
import { blobReq, engineFixture, type EngineFixture } from "./support/test-producer.ts";

const fixtures: EngineFixture[] = [];
after(() => fixtures.forEach((f) => f.close()));
function fixture(...args: Parameters<typeof engineFixture>): EngineFixture {
  const f = engineFixture(...args);
  fixtures.push(f);
  return f;
}

const text = textContent("json", "content-coding", 600_000);
const noise = randomBytes(600_000);

async function ask(
  fx: EngineFixture,
  handle: string,
  extra: Record<string, unknown>,
): Promise<GetBlobRet> {
  const ret = await fx.engine.getBlob(blobReq(handle, extra));
  assert.ok(!("code" in ret), JSON.stringify(ret));
  return ret;
}

function carried(r: GetBlobRet): Buffer {
  return typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : Buffer.from(r.blob);
}

function decoded(r: GetBlobRet): Buffer {
  const b = carried(r);
  switch (r.content_encoding) {
    case "br":
      return brotliDecompressSync(b);
    case "gzip":
      return gunzipSync(b);
    case "deflate":
      return inflateSync(b);
    default:
      return b;
  }
}

/** The coding an answer is in: its `content_encoding`, identity when it has none (D63). */
function codingOf(r: GetBlobRet): string {
  return r.content_encoding ?? "identity";
}

/** An identity answer is the plain answer: neither coding field. */
function assertIdentity(r: GetBlobRet): void {
  assert.equal(r.content_encoding, undefined);
  assert.equal(r.decoded_size, undefined);
}

async function outcomes(m: ComputerMetrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await m.codedChunks.get()).values) {
    out[`${v.labels.coding}/${v.labels.outcome}`] = v.value;
  }
  return out;
}

async function codingSeconds(m: ComputerMetrics): Promise<number> {
  return (await m.codingSeconds.get()).values.reduce((a, v) => a + v.value, 0);
}

void describe("the answer", () => {
  const fx = fixture();
  const path = join(fx.dir, "data.json");
  writeFileSync(path, text);
  const handle = fx.fileHandle(path, "application/json");
  const bytesHandle = fx.bytesHandle(text, "text/plain");

  void test("coded, in both carriages and for both kinds of source; offsets stay decoded", async () => {
    for (const h of [handle, bytesHandle]) {
      for (const blob_format of [undefined, "binary"]) {
        for (const coding of ["br", "gzip", "deflate"]) {
          const r = await ask(fx, h, {
            chunk_offset: 100_000,
            max_chunk_bytes: 200_000,
            content_encoding: [coding],
            ...(blob_format ? { blob_format } : {}),
          });
          assert.equal(r.content_encoding, coding);
          assert.equal(r.decoded_size, 200_000);
          assert.equal(r.chunk_offset, 100_000);
          assert.equal(r.total_size, text.length);
          assert.equal(r.eof, false);
          assert.equal(typeof r.blob === "string", blob_format === undefined);
          assert.equal(r.blob_format, blob_format);
          assert.ok(carried(r).length < 200_000 / 2, "text shrinks");
          assert.ok(decoded(r).equals(text.subarray(100_000, 300_000)));
        }
      }
    }
  });

  void test("the last chunk: eof on the decoded length", async () => {
    const r = await ask(fx, handle, {
      chunk_offset: 500_000,
      max_chunk_bytes: 200_000,
      content_encoding: "br",
    });
    assert.equal(r.decoded_size, 100_000);
    assert.equal(r.eof, true);
    assert.ok(decoded(r).equals(text.subarray(500_000)));
  });

  void test("a request without the field gets exactly the answer it got before", async () => {
    const r = await ask(fx, handle, { max_chunk_bytes: 1000 });
    assert.deepEqual(Object.keys(r), [
      "blob_handle",
      "mime_type",
      "total_size",
      "sha256",
      "chunk_offset",
      "req_id",
      "eof",
      "blob",
    ]);
  });

  void test("the Agent's order decides; unknown tokens are passed over; identity is a choice", async () => {
    const cases: Array<[unknown, string]> = [
      [["gzip", "br"], "gzip"],
      [["zstd", "x-new", "br"], "br"],
      ["BR", "br"],
      [["identity", "br"], "identity"],
      [["zstd"], "identity"],
      [[], "identity"],
    ];
    for (const [accepted, expected] of cases) {
      const r = await ask(fx, handle, { max_chunk_bytes: 50_000, content_encoding: accepted });
      assert.equal(codingOf(r), expected, JSON.stringify(accepted));
      assert.equal(r.decoded_size, expected === "identity" ? undefined : 50_000);
      assert.ok(decoded(r).equals(text.subarray(0, 50_000)));
    }
  });

  void test("negotiate: a Computer without a coding answers with the next the Agent named", () => {
    assert.equal(negotiate(["br", "gzip"], ["gzip"]), "gzip");
    assert.equal(negotiate(["br"], []), "identity");
    assert.equal(negotiate(undefined), undefined);
  });
});

void describe("when the Computer does not compress", () => {
  void test("compressed MIME types and tiny chunks: identity, no compression run", async () => {
    const metrics = createComputerMetrics("pc-1");
    const fx = fixture({ metrics });
    const png = fx.bytesHandle(text, "image/png");
    const r = await ask(fx, png, { max_chunk_bytes: 100_000, content_encoding: ["br"] });
    assertIdentity(r);
    assert.ok(carried(r).equals(text.subarray(0, 100_000)));
    const tiny = fx.bytesHandle(text.subarray(0, 300), "text/plain");
    assertIdentity(await ask(fx, tiny, { content_encoding: "br" }));
    assert.equal(await codingSeconds(metrics), 0);
    const o = await outcomes(metrics);
    assert.equal(o["identity/compressed_type"], 1);
    assert.equal(o["identity/too_small"], 1);
  });

  void test("content that does not shrink is tried again only after 1, 2, 4, ... chunks", async () => {
    const metrics = createComputerMetrics("pc-1");
    const fx = fixture({ metrics });
    const path = join(fx.dir, "noise.bin");
    writeFileSync(path, noise);
    const h = fx.fileHandle(path);
    for (let i = 0; i < 40; i++) {
      const r = await ask(fx, h, {
        chunk_offset: (i * 10_000) % 500_000,
        max_chunk_bytes: 10_000,
        blob_format: "binary",
        content_encoding: ["br", "gzip"],
      });
      assertIdentity(r);
      assert.ok(carried(r).equals(noise.subarray(r.chunk_offset, r.chunk_offset + 10_000)));
    }
    // Tries at chunks 1, 3, 6, 11, 20, 37: six of forty.
    const o = await outcomes(metrics);
    assert.equal(o["identity/no_gain"], 6);
    assert.equal(o["identity/incompressible"], 34);
  });

  void test("content that starts random and turns to text gets coded once it does", async () => {
    const fx = fixture();
    const mixed = Buffer.concat([noise.subarray(0, 100_000), text.subarray(0, 400_000)]);
    const h = fx.bytesHandle(mixed);
    const codings: string[] = [];
    for (let off = 0; off < mixed.length; off += 10_000) {
      const r = await ask(fx, h, {
        chunk_offset: off,
        max_chunk_bytes: 10_000,
        content_encoding: ["br"],
      });
      assert.ok(decoded(r).equals(mixed.subarray(off, off + 10_000)));
      codings.push(codingOf(r));
    }
    assert.equal(codings.slice(0, 10).includes("br"), false);
    assert.equal(codings.at(-1), "br", codings.join(" "));
    assert.ok(codings.filter((c) => c === "br").length >= 30, codings.join(" "));
  });

  void test("a content not known to shrink is judged on its first 16 KiB, one known is not", async () => {
    const coder = new ChunkCoder();
    const sha = "c".repeat(64);
    // Noise first, text after: the sample says no, though the whole chunk would shrink.
    const chunk = Buffer.concat([noise.subarray(0, 16 * 1024), text.subarray(0, 200_000)]);
    assert.equal(await coder.encode("br", chunk, "text/plain", sha), null);
    // The same content, once a chunk of it shrank, is coded without a sample.
    const other = "d".repeat(64);
    assert.notEqual(await coder.encode("br", text.subarray(0, 100_000), "text/plain", other), null);
    const coded = await coder.encode("br", chunk, "text/plain", other);
    assert.ok(coded && brotliDecompressSync(coded).equals(chunk));
  });

  void test("--content-codings none: every asked chunk is identity", async () => {
    const fx = fixture({ compression: { codings: [] } });
    const h = fx.bytesHandle(text, "text/plain");
    const r = await ask(fx, h, { max_chunk_bytes: 100_000, content_encoding: ["br", "gzip"] });
    assertIdentity(r);
    assert.equal(carried(r).length, 100_000);
  });
});

void describe("bounded compression", () => {
  void test("beyond the slots and a short line, chunks go identity instead of waiting", async () => {
    const metrics = createComputerMetrics("pc-1");
    const coder = new ChunkCoder({ maxConcurrent: 1, metrics });
    const chunks = Array.from({ length: 12 }, (_, i) =>
      text.subarray(i * 40_000, (i + 1) * 40_000),
    );
    const results = await Promise.all(
      chunks.map((c) => coder.encode("br", c, "application/json", "a".repeat(64))),
    );
    // One running and four in line (WAIT_LINE_PER_SLOT): the other seven are not waited for.
    assert.equal(results.filter((r) => r !== null).length, 5);
    const o = await outcomes(metrics);
    assert.equal(o["br/coded"], 5);
    assert.equal(o["identity/busy"], 7);
    for (let i = 0; i < 5; i++) assert.ok(brotliDecompressSync(results[i]!).equals(chunks[i]!));
  });

  void test("compressions that run most of the time switch to the busy level, and back", async () => {
    const coder = new ChunkCoder({ levels: { br: { idle: 9, busy: 1 } } });
    const chunk = text.subarray(0, 200_000);
    const at = (quality: number): number =>
      brotliCompressSync(chunk, {
        params: {
          [zlibConstants.BROTLI_PARAM_QUALITY]: quality,
          [zlibConstants.BROTLI_PARAM_SIZE_HINT]: chunk.length,
          [zlibConstants.BROTLI_PARAM_LGWIN]: 18,
        },
      }).length;
    const [idle, busy] = [at(9), at(1)];
    assert.notEqual(idle, busy);
    const sizes: number[] = [];
    const code = async (): Promise<number> => {
      const out = await coder.encode("br", chunk, "text/plain", "b".repeat(64));
      return out!.length;
    };
    sizes.push(await code());
    assert.equal(sizes[0], idle, "a quiet coder uses the idle level");
    // Back to back for at least 1.5 s: a compression is running nearly all the time.
    const until = performance.now() + 1500;
    while (performance.now() < until) sizes.push(await code());
    assert.equal(sizes.at(-1), busy, "under load: the busy level");
    // A quiet second and more: nothing ran in the window the next compression measures.
    await new Promise((resolve) => setTimeout(resolve, LOAD_WINDOW_MS + 100));
    assert.equal(await code(), idle, "quiet again: the idle level");
  });
});

void describe("the buffer limit (D16) with coding fields", () => {
  const encoder = new Encoder();
  /** The largest engine.io message the real encoder makes for this answer. */
  function largestMessage(ret: GetBlobRet): number {
    const packets = encoder.encode({
      type: PacketType.ACK,
      nsp: NAMESPACE,
      id: Number.MAX_SAFE_INTEGER,
      data: [ret],
    });
    return Math.max(
      ...packets.map((p) =>
        typeof p === "string" ? Buffer.byteLength("4" + p, "utf8") : (p as Buffer).length,
      ),
    );
  }

  void test("the largest chunk, coded or not, fits; sized for an answer with both fields", async () => {
    for (const limit of [20_000, 65_537, 1_000_000]) {
      const fx = fixture({ maxHttpBufferSize: limit, transport: () => "websocket" });
      const longMime = `text/plain; name="${"ü".repeat(120)}"`;
      for (const [bytes, mime] of [
        [noise, "application/octet-stream"],
        [text, longMime],
      ] as const) {
        const h = fx.bytesHandle(bytes, mime);
        for (const blob_format of [undefined, "binary"]) {
          const extra = { max_chunk_bytes: 2 ** 30, ...(blob_format ? { blob_format } : {}) };
          const plain = await ask(fx, h, extra);
          const asked = await ask(fx, h, { ...extra, content_encoding: ["br"] });
          const n = decoded(asked).length;
          // The fields take room: the chunk is at most the plain one, and not much smaller.
          assert.ok(n <= decoded(plain).length && n > decoded(plain).length - 100);
          assert.ok(largestMessage(asked) <= limit, `${limit} ${mime} ${blob_format}`);
          assert.ok(decoded(asked).equals(bytes.subarray(0, n)));
          if (mime === longMime) assert.equal(asked.content_encoding, "br");
          else {
            // Incompressible at the edge: the identity answer, with room left for the two
            // fields it does not carry, is what was sized to fit.
            assertIdentity(asked);
            if (blob_format === undefined && n < bytes.length) {
              const fields = `"content_encoding":"identity","decoded_size":${bytes.length},`;
              assert.ok(largestMessage(asked) + fields.length > limit - 8);
            }
          }
        }
      }
    }
  });
});
