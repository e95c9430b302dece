// @both-transports
/**
 * Through the real Server: a `client:get_blob` that waits in the Computer's chunk queue so long
 * that its answer would reach the Server after the relay window (`relayTimeoutMs`, D50) gets the
 * flat `busy` error (not a relay 408 or an Agent timeout later), is counted as `stale`, and never
 * reaches its producer; the request that held the only read is still served. The read is held by
 * a producer the test releases, so the outcome does not depend on timing (the window only sets
 * how soon the answer comes).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import type { HandleFields, Producer, ResolveResult } from "../../computer/contracts.ts";
import { RELAY_MARGIN_MS } from "../../computer/chunk-scheduler.ts";
import { busy, Events } from "../../protocol/index.ts";
import { request, ServerHarness, type Socket } from "../support/server-harness.ts";
import { startHarnessComputer, producersOnly } from "./support/harness-computer.ts";

/** The first resolve parks until `open()`; every resolve is counted. */
class HeldProducer implements Producer {
  readonly kind = "tool" as const;
  resolves = 0;
  #open: (() => void) | undefined;
  #parked: Promise<void>;
  #markParked!: () => void;
  constructor() {
    this.#parked = new Promise((r) => (this.#markParked = r));
  }
  resolve(_fields: HandleFields): Promise<ResolveResult> {
    this.resolves++;
    const answer: ResolveResult = {
      ok: true,
      source: { type: "bytes", bytes: Buffer.from("held"), mimeType: "x/y" },
    };
    if (this.resolves > 1) return Promise.resolve(answer);
    return new Promise((resolve) => {
      this.#open = () => resolve(answer);
      this.#markParked();
    });
  }
  parked(): Promise<void> {
    return this.#parked;
  }
  open(): void {
    this.#open?.();
  }
}

const dir = mkdtempSync(join(tmpdir(), "a2c-qwait-"));
const producer = new HeldProducer();
let h: ServerHarness;
let agent: Socket;
let pc: RunningComputer;

before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await startHarnessComputer(h, dir, {
    blob: { maxInFlight: 1, maxQueue: 8 },
    relayTimeoutMs: RELAY_MARGIN_MS + 50,
    services: [producersOnly(producer)],
  });
});

after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

void test("a get_blob queued past the relay window is answered the flat busy and never read", async () => {
  const handle = pc.minter.mint("tool", { id: "x" });
  const ask = (): Promise<unknown> =>
    agent.emitWithAck(Events.GetBlob, request("agent-1", "pc-1", { blob_handle: handle }));
  const holder = ask();
  await producer.parked(); // the only read is taken
  const waiter = await ask(); // queued, then refused when its 50 ms are up
  assert.deepEqual(
    waiter,
    busy("Chunk request waited too long for this Computer's uplink; retry later"),
  );
  assert.equal(producer.resolves, 1, "the refused request never started its read");
  const refusals = await pc.metrics.blobRefusals.get();
  assert.deepEqual(
    refusals.values.map((v) => [v.labels.reason, v.value]),
    [["stale", 1]],
  );
  producer.open();
  const served = (await holder) as { blob?: unknown; total_size?: number };
  assert.equal(served.total_size, 4, "the request holding the read is served normally");
  assert.equal(h.server.inflight(), 0);
});
