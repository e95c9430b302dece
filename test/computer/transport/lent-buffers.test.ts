/**
 * Fast path `lend_buffers` (computer/transport/lent-buffers.ts), on a real Computer/Server pair:
 * with it on (and reported on), binary chunks are read into pooled buffers that go back to the
 * pool after the transport has drained, and are read into again. If a buffer were reused while
 * the transport still referenced it, a later chunk's bytes would overwrite an earlier chunk
 * before it was sent. Many chunks of distinct content, 16 requests in flight, with the Computer
 * on WebSocket only and on polling only: every byte is checked, and buffers must actually have
 * been returned and taken again (otherwise the check proves nothing). With it off, every chunk
 * gets a buffer of its own and nothing is returned.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../../computer/computer.ts";
import { TransportFixture } from "../support/transport-fixture.ts";

const WINDOW = 16;
// Random bytes: every chunk's content differs from every other's.
const content = randomBytes(24 * 1024 * 1024 + 123);
let f: TransportFixture;

before(async () => {
  f = await TransportFixture.start(content);
});

after(async () => {
  await f?.close();
});

/** Pulls every chunk of `chunk` bytes, `WINDOW` requests in flight; checks each chunk's bytes. */
async function pullWindowed(computer: string, handle: string, chunk: number): Promise<number> {
  const offsets: number[] = [];
  for (let o = 0; o < content.length; o += chunk) offsets.push(o);
  let next = 0;
  let checked = 0;
  const lane = async (): Promise<void> => {
    while (next < offsets.length) {
      const offset = offsets[next++]!;
      const got = await f.pull(computer, handle, offset, chunk);
      const want = content.subarray(offset, Math.min(offset + chunk, content.length));
      assert.ok(got.equals(want), `chunk at ${offset} differs`);
      checked += want.length;
    }
  };
  await Promise.all(Array.from({ length: WINDOW }, lane));
  return checked;
}

/** Counts the buffers the engine takes for binary chunks, and how many were taken before. */
function countTakes(pc: RunningComputer): { takes: number; again: number } {
  const buffers = pc.transport.chunkBuffers;
  const take = buffers.take.bind(buffers);
  const seen = new WeakSet<object>();
  const counts = { takes: 0, again: 0 };
  Object.defineProperty(buffers, "take", {
    configurable: true,
    value: (n: number): Buffer => {
      const buf = take(n);
      counts.takes++;
      if (seen.has(buf.buffer)) counts.again++;
      seen.add(buf.buffer);
      return buf;
    },
  });
  return counts;
}

for (const transport of ["websocket", "polling"] as const) {
  void test(`on: binary chunks from reused buffers arrive intact over ${transport}`, async () => {
    const name = `pc-${transport}`;
    const { pc, file } = await f.computer(name, { fastPaths: "all", transports: [transport] });
    assert.equal(pc.fastPaths["lend_buffers"], "on");
    assert.equal(pc.socket.io.engine.transport.name, transport);
    const counts = countTakes(pc);
    // Sync reads (<= 256 KiB) and thread-pool reads; polling carries binary as base64, so its
    // chunks stay under the 1 MB default buffer limit.
    for (const chunk of [64 * 1024, 200 * 1024, 600 * 1024]) {
      assert.equal(await pullWindowed(name, file, chunk), content.length);
    }
    assert.ok(pc.transport.lent.returned > 0, `none returned (${pc.transport.lent.returned})`);
    assert.ok(counts.again > 0, `no buffer was taken twice in ${counts.takes} takes`);
  });
}

void test("off: every binary chunk gets a buffer of its own, none is returned", async () => {
  const { pc, file } = await f.computer("pc-off", { fastPaths: { lendBuffers: false } });
  assert.equal(pc.fastPaths["lend_buffers"], "off");
  const counts = countTakes(pc);
  assert.equal(await pullWindowed("pc-off", file, 256 * 1024), content.length);
  assert.equal(pc.transport.lent.returned, 0);
  assert.equal(counts.again, 0);
  assert.ok(counts.takes >= content.length / (256 * 1024));
});
