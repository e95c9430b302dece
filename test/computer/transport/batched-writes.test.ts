/**
 * Fast path `batch_writes` (computer/transport/index.ts), on a real Computer/Server pair:
 * with it on (and reported on), the Computer's answer to a binary get_blob (two engine.io
 * packets) goes to its TCP socket in ONE write after the polling → WebSocket upgrade; with the stock transport,
 * in one write per packet, as stock socket.io-client does. The Agent gets the chunk's bytes
 * unchanged either way. An answer over `BATCHED_ATTACHMENT_MOST` (the SDK's default 512 KiB chunk)
 * leaves as the stock libraries send it even with the fast path on. Counted on each Computer's
 * own net.Socket.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { clientTcp } from "../../support/server-harness.ts";
import { countTcpWrites } from "../../support/tcp-writes.ts";
import { TransportFixture, type FixtureComputer } from "../support/transport-fixture.ts";
import { BATCHED_ATTACHMENT_MOST } from "../../../computer/transport/index.ts";

const CHUNK = BATCHED_ATTACHMENT_MOST;
const LARGE = 512 * 1024;
let f: TransportFixture;

before(async () => {
  f = await TransportFixture.start(randomBytes(2 * LARGE));
});

after(async () => {
  await f?.close();
});

async function writesPerAnswer(
  name: string,
  c: FixtureComputer,
  chunk = CHUNK,
  count = 4,
): Promise<number[]> {
  const counts: number[] = [];
  for (let offset = 0; offset < count * chunk; offset += chunk) {
    const seen = countTcpWrites(clientTcp(c.pc.socket));
    const got = await f.pull(name, c.file, offset, chunk);
    assert.ok(
      got.equals(f.fileContent.subarray(offset, offset + chunk)),
      `chunk ${offset} differs`,
    );
    counts.push(seen.writes);
  }
  return counts;
}

void test("on: both frames of a binary answer leave in one write", async () => {
  const c = await f.computer("pc-on", { transport: "fast" });
  assert.equal(c.pc.fastPaths["batch_writes"], "on");
  assert.deepEqual(await writesPerAnswer("pc-on", c), [1, 1, 1, 1]);
});

void test("stock: one write per frame, as the stock libraries do", async () => {
  const c = await f.computer("pc-off", { transport: "stock" });
  assert.equal(c.pc.fastPaths["batch_writes"], "off");
  for (const writes of await writesPerAnswer("pc-off", c)) assert.ok(writes >= 2, `${writes}`);
});

void test("on: an answer over the batching bound leaves as the stock libraries send it", async () => {
  const c = await f.computer("pc-large", { transport: "fast" });
  assert.equal(c.pc.fastPaths["batch_writes"], "on");
  for (const writes of await writesPerAnswer("pc-large", c, LARGE, 2)) {
    assert.ok(writes >= 2, `${writes}`);
  }
});
