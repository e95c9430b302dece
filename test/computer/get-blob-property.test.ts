// @pure
/**
 * Property: for random resource sizes, buffer limits, chunk requests, req_id lengths,
 * carriages, transports and content-codings asked (D63), over content that compresses and content
 * that does not, draining from offset 0 reassembles the source exactly, `eof` is set on the last
 * chunk only, every chunk answer's serialized ack fits `maxHttpBufferSize` (coded or identity),
 * and a random offset gives exactly the source slice.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { BlobEngine } from "../../computer/blob/engine.ts";
import { HandleCodec } from "../../computer/blob/handle.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import {
  encodedAckBytes,
  largestAckMessage,
  type GetBlobRet,
  type Transport,
} from "../../protocol/index.ts";
import { TestProducer } from "./support/test-producer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-prop-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const codec = new HandleCodec(randomBytes(32));
const cache = new HashCache({ pool: null });
let files = 0;
/** Answers seen per content_encoding, so the property is known to have reached each kind. */
const seen = new Map<string, number>();

function ackSize(ret: GetBlobRet, transport: Transport): number {
  if (typeof ret.blob === "string") return encodedAckBytes(ret);
  const { blob, eof, ...envelope } = ret;
  return largestAckMessage(envelope, blob.byteLength, eof, "binary", {
    transport,
  });
}

void test("reassembly, eof and the buffer limit hold for random inputs", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        size: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 120_000 })),
        limit: fc.integer({ min: 1_200, max: 1_000_000 }),
        wanted: fc.oneof(
          fc.constant(undefined),
          fc.integer({ min: -1000, max: 0 }),
          fc.integer({ min: 1, max: 2 ** 31 }),
        ),
        reqIdLength: fc.integer({ min: 1, max: 256 }),
        mime: fc.constantFrom("image/png", "application/vnd.ms-excel", "text/plain; charset=ü"),
        binary: fc.boolean(),
        transport: fc.constantFrom<Transport>("websocket", "polling"),
        file: fc.boolean(),
        coding: fc.constantFrom(undefined, ["br"], ["gzip"], ["zstd", "deflate"], ["identity"]),
        compressible: fc.boolean(),
        probe: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
      async (p) => {
        const source = p.compressible ? textLike(p.size) : randomBytes(p.size);
        const producer = new TestProducer();
        let id: string;
        if (p.file) {
          const path = join(dir, `f${files++}`);
          writeFileSync(path, source);
          id = producer.addFile(path, p.mime);
        } else {
          id = producer.addBytes(source, p.mime);
        }
        const engine = new BlobEngine({
          codec,
          hashCache: cache,
          maxHttpBufferSize: p.limit,
          settleMs: 0,
          transport: () => p.transport,
        });
        engine.register(producer);
        const handle = engine.mint("tool", { id });
        // Keep runs short: a 1-byte chunk limit over 120 kB would be 120k requests.
        const wanted =
          p.wanted !== undefined && p.wanted > 0
            ? Math.max(p.wanted, Math.ceil(p.size / 300))
            : p.wanted;
        const ask = async (offset: number): Promise<GetBlobRet> => {
          const req: Record<string, unknown> = {
            agent: "a",
            req_id: "r".repeat(p.reqIdLength),
            computer: "pc-1",
            blob_handle: handle,
            chunk_offset: offset,
          };
          if (wanted !== undefined) req.max_chunk_bytes = wanted;
          if (p.binary) req.blob_format = "binary";
          if (p.coding) req.content_encoding = p.coding;
          const ret = await engine.getBlob(req as never);
          assert.ok(!("code" in ret), JSON.stringify(ret));
          const r = ret;
          assert.ok(ackSize(r, p.transport) <= p.limit, "ack within maxHttpBufferSize");
          return r;
        };
        const bytesOf = (r: GetBlobRet): Buffer => {
          const carried =
            typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : Buffer.from(r.blob);
          if (!p.coding || r.content_encoding === undefined) {
            // Not asked, or identity: the plain answer, neither coding field (D63).
            assert.equal(r.decoded_size, undefined);
            if (p.coding) seen.set("identity", (seen.get("identity") ?? 0) + 1);
            return carried;
          }
          const decoded = decode(r.content_encoding, carried);
          seen.set(r.content_encoding, (seen.get(r.content_encoding) ?? 0) + 1);
          assert.equal(r.decoded_size, decoded.length, "decoded_size is the decoded length");
          assert.ok(carried.length < decoded.length, "a coded blob is smaller than its chunk");
          return decoded;
        };

        const parts: Buffer[] = [];
        let offset = 0;
        for (;;) {
          const r = await ask(offset);
          const b = bytesOf(r);
          assert.equal(r.chunk_offset, offset);
          assert.equal(r.total_size, p.size);
          assert.equal(r.eof, offset + b.length === p.size, "eof exactly on the last chunk");
          if (!r.eof) assert.ok(b.length > 0, "progress");
          if (wanted !== undefined && wanted > 0) assert.ok(b.length <= wanted);
          parts.push(b);
          offset += b.length;
          if (r.eof) break;
        }
        assert.ok(Buffer.concat(parts).equals(source), "reassembly equals the source");

        const at = Math.floor(p.probe * p.size);
        const r = await ask(at);
        const b = bytesOf(r);
        assert.ok(b.equals(source.subarray(at, at + b.length)));
      },
    ),
    { numRuns: 120, seed: 4242 },
  );
  for (const coding of ["identity", "br", "gzip", "deflate"]) {
    assert.ok(
      (seen.get(coding) ?? 0) > 0,
      `no ${coding} answer was drawn: ${JSON.stringify([...seen])}`,
    );
  }
});

/** Bytes that compress (words from a small set, with a few random bytes between). */
function textLike(n: number): Buffer {
  const words = ["alpha ", "beta ", "gamma\n", "delta, ", "epsilon. "];
  const noise = randomBytes(Math.ceil(n / 7));
  let s = "";
  for (let i = 0; s.length < n; i++)
    s +=
      words[noise[i % noise.length]! % 5]! + (i % 7 === 0 ? String(noise[i % noise.length]) : "");
  return Buffer.from(s.slice(0, n), "latin1");
}

function decode(coding: string | undefined, carried: Buffer): Buffer {
  switch (coding) {
    case "br":
      return brotliDecompressSync(carried);
    case "gzip":
      return gunzipSync(carried);
    case "deflate":
      return inflateSync(carried);
    default:
      throw new Error(`unexpected content_encoding ${String(coding)}`);
  }
}
