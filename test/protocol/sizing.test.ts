// @pure
/**
 * D16 size math driven against the real socket.io-parser encoder: for random buffer limits,
 * handle, req_id and MIME lengths, the computed chunk's encoded ack is <= the limit, and one byte
 * more would exceed it (base64 and binary carriage).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Encoder, PacketType } from "socket.io-parser";
import {
  base64Length,
  encodedAckBytes,
  largestAckMessage,
  maxChunkBytes,
  NAMESPACE,
  type ChunkEnvelope,
} from "../../protocol/index.ts";

const encoder = new Encoder();
const sha = "ab".repeat(32);

/** The engine.io messages the real stack sends for this ack, as byte lengths. */
function realMessages(ret: Record<string, unknown>, ackId: number): number[] {
  const packets = encoder.encode({
    type: PacketType.ACK, // the encoder upgrades to BINARY_ACK when it finds binary, as socket.io does
    nsp: NAMESPACE,
    id: ackId,
    data: [ret],
  });
  return packets.map((p) =>
    typeof p === "string" ? Buffer.byteLength("4" + p, "utf8") : (p as Buffer).length,
  );
}

const envelopeArb = fc.record({
  handleLen: fc.integer({ min: 1, max: 4096 }),
  reqLen: fc.integer({ min: 1, max: 256 }),
  mime: fc.oneof(
    fc.constantFrom("image/png", "application/octet-stream", "text/markdown; charset=utf-8"),
    fc.string({ maxLength: 200 }), // arbitrary tool-provided MIME, escapes and non-ASCII included
  ),
  offset: fc.integer({ min: 0, max: 2 ** 40 }),
  limit: fc.integer({ min: 2_000, max: 4_200_000 }),
  ackId: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
});

function envelopeOf(e: {
  handleLen: number;
  reqLen: number;
  mime: string;
  offset: number;
}): ChunkEnvelope {
  return {
    blob_handle: "h".repeat(e.handleLen),
    mime_type: e.mime,
    total_size: e.offset + 10 ** 9,
    sha256: sha,
    chunk_offset: e.offset,
    req_id: "r".repeat(e.reqLen),
  };
}

void test("base64: the computed chunk fits and one byte more does not", () => {
  fc.assert(
    fc.property(envelopeArb, (e) => {
      const envelope = envelopeOf(e);
      const n = maxChunkBytes({
        maxHttpBufferSize: e.limit,
        envelope,
        carriage: "base64",
        ackId: e.ackId,
      });
      const fits = (bytes: number) =>
        Math.max(
          ...realMessages(
            { ...envelope, eof: false, blob: Buffer.alloc(bytes).toString("base64") },
            e.ackId,
          ),
        ) <= e.limit;
      if (n === 0) return !fits(1);
      return fits(n) && !fits(n + 1);
    }),
    { numRuns: 150 },
  );
});

void test("base64: without a known ack id the widest id is budgeted, so any real id fits", () => {
  fc.assert(
    fc.property(envelopeArb, (e) => {
      const envelope = envelopeOf(e);
      const n = maxChunkBytes({ maxHttpBufferSize: e.limit, envelope, carriage: "base64" });
      if (n === 0) return true; // nothing fits: the Computer answers an error instead of a chunk
      const real = realMessages(
        { ...envelope, eof: false, blob: Buffer.alloc(n).toString("base64") },
        e.ackId,
      );
      return Math.max(...real) <= e.limit;
    }),
    { numRuns: 200 },
  );
});

void test("binary over WebSocket: header and attachment each fit; one byte more does not", () => {
  fc.assert(
    fc.property(envelopeArb, (e) => {
      const envelope = { ...envelopeOf(e), blob_format: "binary" as const };
      const n = maxChunkBytes({
        maxHttpBufferSize: e.limit,
        envelope,
        carriage: "binary",
        ackId: e.ackId,
      });
      const largest = (bytes: number) =>
        Math.max(...realMessages({ ...envelope, eof: false, blob: Buffer.alloc(bytes) }, e.ackId));
      if (n === 0) return largest(1) > e.limit;
      return largest(n) <= e.limit && largest(n + 1) > e.limit;
    }),
    { numRuns: 200 },
  );
});

void test("binary over polling budgets the 'b' + base64 form of the attachment", () => {
  const envelope = envelopeOf({ handleLen: 100, reqLen: 20, mime: "image/png", offset: 0 });
  const n = maxChunkBytes({
    maxHttpBufferSize: 1_000_000,
    envelope,
    carriage: "binary",
    transport: "polling",
  });
  assert.ok(1 + base64Length(n) <= 1_000_000);
  assert.ok(1 + base64Length(n + 1) > 1_000_000);
});

void test("largestAckMessage agrees with the real encoder", () => {
  fc.assert(
    fc.property(
      envelopeArb,
      fc.integer({ min: 0, max: 300_000 }),
      fc.boolean(),
      (e, bytes, eof) => {
        const envelope = envelopeOf(e);
        const b64 = realMessages(
          { ...envelope, eof, blob: Buffer.alloc(bytes).toString("base64") },
          e.ackId,
        );
        const bin = realMessages({ ...envelope, eof, blob: Buffer.alloc(bytes) }, e.ackId);
        return (
          largestAckMessage(envelope, bytes, eof, "base64", { ackId: e.ackId }) ===
            Math.max(...b64) &&
          largestAckMessage(envelope, bytes, eof, "binary", { ackId: e.ackId }) === Math.max(...bin)
        );
      },
    ),
    { numRuns: 200 },
  );
});

void test("encodedAckBytes is exact for JSON answers with escapes and non-ASCII", () => {
  const payload = { body: 'line\n"quoted"\u0001 and ünïcödé 🚀', req_id: "r" };
  assert.equal(encodedAckBytes(payload, { ackId: 42 }), Math.max(...realMessages(payload, 42)));
});

void test("default 1 MB buffer: the largest base64 chunk is about 731 KiB", () => {
  const envelope = envelopeOf({
    handleLen: 120,
    reqLen: 36,
    mime: "application/octet-stream",
    offset: 0,
  });
  const n = maxChunkBytes({ maxHttpBufferSize: 1_000_000, envelope, carriage: "base64" });
  assert.ok(n > 740_000 && n < 750_000, String(n));
});
