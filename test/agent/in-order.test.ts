// @pure
/**
 * A read's bytes in order (agent/sinks.ts, `InOrder`): chunks put in any order reach the sink in
 * offset order, each hashed after its commit and given back once committed; a sink that answers
 * a commit with a promise is waited for (`committing`), its late failure reported; a resume goes
 * on from the sink's prefix with the hash that read it; what is still held at the end goes back.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";
import { InOrder, type Sink } from "../../agent/sinks.ts";

/** A sink that records its commits, optionally answering each with a promise it controls. */
function recorder(late = false) {
  const commits: { offset: number; bytes: Buffer }[] = [];
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const sink: Sink<void> = {
    begin: async () => undefined,
    commit(offset, bytes) {
      commits.push({ offset, bytes: Buffer.from(bytes) });
      if (!late) return;
      return new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
    },
    canRestart: () => true,
    finish: async () => undefined,
    abort: async () => undefined,
  };
  return { sink, commits, pending };
}

void test("chunks put in any order are committed in offset order, hashed, and given back", () => {
  const blob = randomBytes(10_000);
  const r = recorder();
  const released: Buffer[] = [];
  const events: unknown[] = [];
  const order = new InOrder(
    r.sink,
    (b) => released.push(b),
    (err) => events.push(err),
  );
  const parts = [
    [6000, 10_000],
    [2000, 6000],
    [0, 2000],
  ].map(([a, b]) => ({ at: a!, bytes: blob.subarray(a, b) }));
  order.put(parts[0]!.at, parts[0]!.bytes);
  order.put(parts[1]!.at, parts[1]!.bytes);
  assert.equal(r.commits.length, 0, "nothing is committed before offset 0 is in");
  assert.equal(order.pending, 2);
  order.put(parts[2]!.at, parts[2]!.bytes);
  assert.deepEqual(
    r.commits.map((c) => c.offset),
    [0, 2000, 6000],
  );
  assert.equal(order.prefix, 10_000);
  assert.equal(order.pending, 0);
  assert.equal(released.length, 3);
  assert.deepEqual(events, [], "a synchronous sink reports nothing");
  assert.equal(order.digest(), createHash("sha256").update(blob).digest("hex"));
});

void test("a commit answered later is waited for; its failure is reported", async () => {
  const r = recorder(true);
  const events: unknown[] = [];
  const order = new InOrder(
    r.sink,
    () => undefined,
    (err) => events.push(err ?? "done"),
  );
  order.put(0, Buffer.alloc(100, 1));
  order.put(100, Buffer.alloc(100, 2));
  assert.equal(order.committing, 2);
  r.pending[0]!.resolve();
  r.pending[1]!.reject(new Error("disk full"));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(order.committing, 0);
  assert.equal(events[0], "done");
  assert.match(String(events[1]), /disk full/);
});

void test("a resume goes on from the sink's prefix with its hash; what is held goes back at the end", () => {
  const blob = randomBytes(4096);
  const r = recorder();
  const released: Buffer[] = [];
  const order = new InOrder(
    r.sink,
    (b) => released.push(b),
    () => undefined,
  );
  const hash = createHash("sha256").update(blob.subarray(0, 1024));
  order.startAt(1024, hash);
  order.put(1024, blob.subarray(1024, 2048));
  order.put(3072, blob.subarray(3072));
  assert.deepEqual(
    r.commits.map((c) => c.offset),
    [1024],
  );
  order.clear();
  assert.equal(released.length, 2, "the committed chunk and the one still held");
  assert.equal(order.pending, 0);
  order.put(2048, blob.subarray(2048, 3072));
  order.put(3072, blob.subarray(3072));
  assert.equal(order.digest(), createHash("sha256").update(blob).digest("hex"));
});
