// computer/mask-in-place.ts, as startComputer wires it: the chunk buffer the blob engine lent for a
// binary answer is masked in place by ws (the frame leaves as header + that buffer, no masked
// copy), while a Buffer the Computer does not own (a producer's in-memory bytes) is never written:
// ws masks a copy of it, and it stays intact across answers. The Agent gets the exact bytes either
// way (the Server unmasks what it receives, so a wrong mask would show as wrong bytes).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { GetBlobRetSchema } from "../../protocol/index.ts";
import { emitAck, request, ServerHarness, type Socket } from "../support/server-harness.ts";
import { TestProducer } from "./support/test-producer.ts";
import { startHarnessComputer, producersOnly, upgraded } from "./support/harness-computer.ts";

const CHUNK = 64 * 1024;
const dir = mkdtempSync(join(tmpdir(), "a2c-maskinplace-"));
const fileContent = randomBytes(4 * CHUNK);
const memory = randomBytes(4 * CHUNK);
const memoryCopy = Buffer.from(memory);
let h: ServerHarness;
let agent: Socket;
let pc: RunningComputer;
let fileHandle = "";
let memoryHandle = "";

before(async () => {
  writeFileSync(join(dir, "file.bin"), fileContent);
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  const producer = new TestProducer();
  const fileId = producer.addFile(join(dir, "file.bin"), "application/octet-stream");
  const memoryId = producer.addBytes(memory, "application/octet-stream");
  pc = await startHarnessComputer(h, dir, { services: [producersOnly(producer)] });
  fileHandle = pc.minter.mint("tool", { id: fileId });
  memoryHandle = pc.minter.mint("tool", { id: memoryId });
  await upgraded(pc);
});

after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The parts of every frame the Computer's ws sender writes while `run` runs. */
async function framesDuring(run: () => Promise<void>): Promise<Buffer[][]> {
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

async function pull(handle: string, offset: number): Promise<Buffer> {
  const req = request("agent-1", "pc-1", {
    blob_handle: handle,
    chunk_offset: offset,
    max_chunk_bytes: CHUNK,
    blob_format: "binary",
  });
  const [answer] = await emitAck(agent, "client:get_blob", req);
  const ret = GetBlobRetSchema.parse(answer);
  assert.ok(Buffer.isBuffer(ret.blob), "a binary answer carries a Buffer");
  return ret.blob;
}

/** The payload-sized part of the frame that carried the chunk (the only frame that big). */
function chunkFrame(frames: Buffer[][]): Buffer[] {
  const big = frames.filter((parts) => parts.some((p) => p.length >= CHUNK));
  assert.equal(big.length, 1, `${big.length} chunk-sized frames`);
  return big[0]!;
}

void test("a lent chunk buffer is masked in place: header + the buffer itself, exact bytes", async () => {
  for (let offset = 0; offset < fileContent.length; offset += CHUNK) {
    let got: Buffer = Buffer.alloc(0);
    const frames = await framesDuring(async () => {
      got = await pull(fileHandle, offset);
    });
    assert.ok(got.equals(fileContent.subarray(offset, offset + CHUNK)), `chunk ${offset} differs`);
    const parts = chunkFrame(frames);
    // ws's copy would be one merged buffer of header + masked payload.
    assert.equal(parts.length, 2, "the chunk was copied to be masked");
    assert.ok(parts[0]!.length <= 14, "the first part is the frame header");
    assert.equal(parts[1]!.length, CHUNK);
  }
});

void test("a producer's in-memory bytes are never masked in place", async () => {
  for (let round = 0; round < 2; round++) {
    for (let offset = 0; offset < memory.length; offset += CHUNK) {
      let got: Buffer = Buffer.alloc(0);
      const frames = await framesDuring(async () => {
        got = await pull(memoryHandle, offset);
      });
      assert.ok(got.equals(memoryCopy.subarray(offset, offset + CHUNK)), `chunk ${offset} differs`);
      assert.equal(chunkFrame(frames).length, 1, "ws masks a copy of bytes it does not own");
    }
  }
  assert.ok(memory.equals(memoryCopy), "the producer's bytes were modified");
});
