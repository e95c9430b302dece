/**
 * Fast path `mask_in_place` (computer/transport/index.ts), on a real Computer/Server
 * pair: with it on (and reported on), the buffer a binary file chunk was read into is masked in
 * place by ws (the frame leaves as header + that buffer, no masked copy), while a Buffer the
 * Computer does not own (a producer's in-memory bytes) is never written: ws masks a copy, and it
 * stays intact across answers. With the stock transport, ws masks a copy of every chunk, as stock ws does. The
 * Agent gets the exact bytes either way (the Server unmasks what it receives, so a wrong mask
 * would show as wrong bytes).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../../computer/computer.ts";
import { TransportFixture, type FixtureComputer } from "../support/transport-fixture.ts";

const CHUNK = 64 * 1024;
const memory = randomBytes(4 * CHUNK);
const memoryCopy = Buffer.from(memory);
let f: TransportFixture;

before(async () => {
  f = await TransportFixture.start(randomBytes(4 * CHUNK), memory);
});

after(async () => {
  await f?.close();
});

/** The parts of every frame the Computer's ws sender writes while `run` runs. */
async function framesDuring(pc: RunningComputer, run: () => Promise<void>): Promise<Buffer[][]> {
  const transport = pc.socket.io.engine.transport as unknown as {
    name: string;
    ws: { _sender: { sendFrame: (list: Buffer[], cb?: unknown) => void } };
  };
  assert.equal(transport.name, "websocket");
  const sender = transport.ws._sender;
  const frames: Buffer[][] = [];
  sender.sendFrame = function (this: unknown, list: Buffer[], cb?: unknown): void {
    frames.push([...list]);
    Object.getPrototypeOf(sender).sendFrame.call(this, list, cb);
  };
  try {
    await run();
  } finally {
    delete (sender as { sendFrame?: unknown }).sendFrame;
  }
  return frames;
}

/** The parts of the frame that carried each chunk of `handle` (the only frames that big). */
async function chunkFrames(name: string, c: FixtureComputer, handle: string, want: Buffer) {
  const out: Buffer[][] = [];
  for (let offset = 0; offset < want.length; offset += CHUNK) {
    let got: Buffer = Buffer.alloc(0);
    const frames = await framesDuring(c.pc, async () => {
      got = await f.pull(name, handle, offset, CHUNK);
    });
    assert.ok(got.equals(want.subarray(offset, offset + CHUNK)), `chunk ${offset} differs`);
    const big = frames.filter((parts) => parts.some((p) => p.length >= CHUNK));
    assert.equal(big.length, 1, `${big.length} chunk-sized frames`);
    out.push(big[0]!);
  }
  return out;
}

void test("on: a file chunk is masked in place (header + the buffer itself), exact bytes", async () => {
  const c = await f.computer("pc-on", { transport: "fast" });
  assert.equal(c.pc.fastPaths["mask_in_place"], "on");
  for (const parts of await chunkFrames("pc-on", c, c.file, f.fileContent)) {
    // ws's copy would be one merged buffer of header + masked payload.
    assert.equal(parts.length, 2, "the chunk was copied to be masked");
    assert.ok(parts[0]!.length <= 14, "the first part is the frame header");
    assert.equal(parts[1]!.length, CHUNK);
  }
  // A producer's in-memory bytes are never masked in place.
  for (let round = 0; round < 2; round++) {
    for (const parts of await chunkFrames("pc-on", c, c.memory, memoryCopy)) {
      assert.equal(parts.length, 1, "ws masks a copy of bytes it does not own");
    }
  }
  assert.ok(memory.equals(memoryCopy), "the producer's bytes were modified");
});

void test("stock: ws masks a copy of every chunk, as stock ws does", async () => {
  const c = await f.computer("pc-off", { transport: "stock" });
  assert.equal(c.pc.fastPaths["mask_in_place"], "off");
  for (const parts of await chunkFrames("pc-off", c, c.file, f.fileContent)) {
    assert.equal(parts.length, 1, "the chunk was masked in place");
  }
});
