// @pure
/**
 * Concurrency limits of chunk answers (computer/chunk-scheduler.ts `ChunkScheduler` over the real blob
 * engine): at most `maxInFlight` chunk reads run, at most `maxQueue` wait, and anything beyond
 * gets the flat `busy` error at once (no unbounded memory). Queued requests are read as reads
 * finish.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { BlobEngine } from "../../computer/blob/engine.ts";
import { HandleCodec } from "../../computer/blob/handle.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import type { HandleFields, Producer, ResolveResult } from "../../computer/contracts.ts";
import { ChunkScheduler } from "../../computer/chunk-scheduler.ts";
import { busy } from "../../protocol/index.ts";
import { blobReq } from "./support/test-producer.ts";

/** A producer whose answers the test releases one by one. */
class GatedProducer implements Producer {
  readonly kind = "tool" as const;
  readonly waiting: Array<() => void> = [];
  #arrived: (() => void) | undefined;

  resolve(_fields: HandleFields): Promise<ResolveResult> {
    return new Promise((resolve) => {
      this.waiting.push(() =>
        resolve({
          ok: true,
          source: { type: "bytes", bytes: Buffer.from("abc"), mimeType: "x/y" },
        }),
      );
      this.#arrived?.();
    });
  }

  /** Resolves once `n` resolves are parked. */
  async parked(n: number): Promise<void> {
    while (this.waiting.length < n) await new Promise<void>((r) => (this.#arrived = r));
  }
}

void test("in flight, queued, then busy; queued work runs when reads finish", async () => {
  const producer = new GatedProducer();
  const engine = new BlobEngine({
    codec: new HandleCodec(randomBytes(32)),
    hashCache: new HashCache({ pool: null }),
    maxHttpBufferSize: 1_000_000,
  });
  engine.register(producer);
  const chunks = new ChunkScheduler({
    maxHttpBufferSize: 1_000_000,
    maxInFlight: 2,
    maxQueue: 1,
    read: (req) => engine.getBlob(req),
    transport: { unsentBytes: () => 0, onWritable: () => undefined },
    answer: (ack, result) => ack(result),
  });
  const h = engine.mint("tool", { id: "x" });
  const ask = (): Promise<unknown> => new Promise((resolve) => chunks.submit(blobReq(h), resolve));
  const running = [ask(), ask()];
  await producer.parked(2);
  const queued = ask();
  assert.equal(chunks.queued, 1);
  assert.deepEqual(
    await ask(),
    busy("Too many chunk requests queued at this Computer; retry later"),
  );
  assert.equal(producer.waiting.length, 2, "the queued request has not reached the producer");
  producer.waiting.shift()!();
  await producer.parked(2); // the queued one started when a read finished
  for (const release of producer.waiting.splice(0)) release();
  for (const r of [...running, queued])
    assert.equal(((await r) as { total_size: number }).total_size, 3);
});
