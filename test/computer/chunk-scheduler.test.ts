// @pure
/**
 * The chunk scheduler (computer/chunk-scheduler.ts `ChunkScheduler`, D47–D50) against a link it is told
 * about through its transport seam: answers handed over add to the socket's unsent bytes, and
 * the test drains them as a link of fixed rate would, waking the scheduler like the socket's
 * drain event does.
 * - Two flows with different chunk sizes and carriages, both backlogged: each gets the same wire
 *   bytes (deficit round robin), though one asked for all its chunks first (first in, first out
 *   would serve it alone).
 * - The bound holds: unsent bytes plus chunks being read never exceed it by more than one answer.
 * - A request queued while the link is stalled, past what the relay window allows, is answered
 *   `busy` (`stale`) and never read; one queued within the window is served.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChunkScheduler, RELAY_MARGIN_MS } from "../../computer/chunk-scheduler.ts";
import { createComputerMetrics } from "../../computer/metrics.ts";
import type { GetBlobReq } from "../../protocol/index.ts";

const MiB = 1024 * 1024;

/** A socket whose unsent bytes the test drains. */
class Link {
  unsent = 0;
  maxSeen = 0;
  readonly #listeners: Array<() => void> = [];
  readonly transport = {
    unsentBytes: () => this.unsent,
    onWritable: (listener: () => void) => void this.#listeners.push(listener),
  };

  add(bytes: number): void {
    this.unsent += bytes;
  }

  /** The link sends `bytes` (or what it holds), then the socket says it may take more. */
  drain(bytes: number): void {
    this.unsent = Math.max(0, this.unsent - bytes);
    for (const listener of this.#listeners) listener();
  }
}

let reqs = 0;
function req(agent: string, handle: string, extra: Partial<GetBlobReq>): GetBlobReq {
  return { agent, req_id: `r${++reqs}`, computer: "pc-1", blob_handle: handle, ...extra };
}

/** A read that answers at once with a chunk of the size asked for, in the carriage asked for. */
async function read(r: GetBlobReq): Promise<unknown> {
  const n = r.max_chunk_bytes ?? 0;
  const blob = r.blob_format === "binary" ? Buffer.alloc(n) : "x".repeat(4 * Math.ceil(n / 3));
  return { req_id: r.req_id, blob };
}

/** The bytes a chunk answer carries (0 for an error answer). */
const wire = (result: unknown): number => (result as { blob?: Buffer | string }).blob?.length ?? 0;

void test("two backlogged flows get equal wire bytes whatever their chunks and carriage", async () => {
  const link = new Link();
  const bound = 1 * MiB;
  const got = new Map<string, number>();
  const scheduler = new ChunkScheduler({
    maxHttpBufferSize: 1_000_000,
    maxUnsentBytes: bound,
    // The bytes bound only: this link drains as the event loop turns, at no rate of its own.
    unsentTargetMs: 0,
    read,
    transport: link.transport,
    answer: (ack, result) => {
      link.add(wire(result));
      ack(result);
    },
  });
  const ask = (r: GetBlobReq): void =>
    scheduler.submit(r, (result) => {
      got.set(r.agent, (got.get(r.agent) ?? 0) + wire(result));
    });
  // Agent a asks for 48 binary chunks of 512 KiB first, then agent b for 400 base64 ones of 64 KiB.
  for (let i = 0; i < 48; i++) {
    ask(req("a", "ha", { max_chunk_bytes: 512 * 1024, blob_format: "binary" }));
  }
  for (let i = 0; i < 400; i++) ask(req("b", "hb", { max_chunk_bytes: 64 * 1024 }));
  await new Promise((r) => setImmediate(r));
  // The link sends 128 KiB at a time (both flows stay backlogged throughout). Shares are counted
  // from the moment both flows are queued and the first round has passed: before b asked, a
  // rightly had the link to itself.
  let from = { a: 0, b: 0 };
  for (let sent = 0; sent < 18 * MiB; sent += 128 * 1024) {
    if (sent === 2 * MiB) from = { a: got.get("a") ?? 0, b: got.get("b") ?? 0 };
    link.drain(128 * 1024);
    link.maxSeen = Math.max(link.maxSeen, link.unsent);
    await new Promise((r) => setImmediate(r));
  }
  const a = (got.get("a") ?? 0) - from.a;
  const b = (got.get("b") ?? 0) - from.b;
  assert.ok(a > 4 * MiB && b > 4 * MiB, `both served: a ${a}, b ${b}`);
  assert.ok(Math.abs(a - b) <= 1_100_000, `equal shares within a quantum: a ${a}, b ${b}`);
  assert.ok(link.maxSeen <= bound + 1_000_000, `unsent stayed near the bound: ${link.maxSeen}`);
  scheduler.close();
});

void test("a request queued past the relay window is answered busy, unread", async () => {
  const link = new Link();
  link.add(2 * MiB); // a stalled link: the socket holds more than the bound
  const metrics = createComputerMetrics("pc-1");
  const reads: string[] = [];
  const scheduler = new ChunkScheduler({
    maxHttpBufferSize: 1_000_000,
    maxUnsentBytes: MiB,
    relayTimeoutMs: RELAY_MARGIN_MS + 100,
    read: (r) => {
      reads.push(r.req_id);
      return read(r);
    },
    transport: link.transport,
    answer: (ack, result) => ack(result),
    metrics,
  });
  const ask = (r: GetBlobReq): Promise<unknown> =>
    new Promise((resolve) => scheduler.submit(r, resolve));
  const stale = await ask(req("a", "ha", { max_chunk_bytes: 1000 }));
  assert.deepEqual(stale, {
    code: 500,
    message: "Chunk request waited too long for this Computer's uplink; retry later",
    details: { reason: "busy" },
  });
  assert.deepEqual(reads, [], "never read");
  const refusals = (await metrics.blobRefusals.get()).values;
  assert.deepEqual(
    refusals.map((v) => [v.labels.reason, v.value]),
    [["stale", 1]],
  );

  const fresh = ask(req("a", "ha", { max_chunk_bytes: 1000 }));
  link.drain(2 * MiB); // the link moves again within the window
  const served = (await fresh) as { blob?: unknown };
  assert.ok(typeof served.blob === "string", "served");
  assert.equal(reads.length, 1);
  scheduler.close();
});
