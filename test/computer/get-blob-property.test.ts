// @pure
/**
 * Property: for random resource sizes, buffer limits, chunk requests, req_id lengths,
 * carriages and transports, draining from offset 0 reassembles the source exactly, `eof` is set
 * on the last chunk only, every chunk answer's serialized ack fits `maxHttpBufferSize`, and a
 * random offset gives exactly the source slice.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
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
        probe: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
      async (p) => {
        const source = randomBytes(p.size);
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
          const ret = await engine.getBlob(req as never);
          assert.ok(!("code" in ret), JSON.stringify(ret));
          const r = ret;
          assert.ok(ackSize(r, p.transport) <= p.limit, "ack within maxHttpBufferSize");
          return r;
        };
        const bytesOf = (r: GetBlobRet): Buffer =>
          typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : Buffer.from(r.blob);

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
});
