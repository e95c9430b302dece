/**
 * Binary chunks are read into pooled buffers that go back to the pool after the transport has
 * drained (computer/blob/buffers.ts `DrainReleases`). If a buffer were reused while the transport
 * still referenced it, a later chunk's bytes would overwrite an earlier chunk before it was
 * copied or sent. Many chunks of distinct content, 16 requests in flight, through a real Server,
 * with the Computer on WebSocket only and on polling only: every byte is checked, and the pool
 * must actually have been reused (otherwise the check proves nothing).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { GetBlobRetSchema, type Transport } from "../../protocol/index.ts";
import { emitAck, request, ServerHarness, type Socket } from "../support/server-harness.ts";
import { TestProducer } from "./support/test-producer.ts";
import { startHarnessComputer, producersOnly } from "./support/harness-computer.ts";

const WINDOW = 16;
const dir = mkdtempSync(join(tmpdir(), "a2c-binpool-"));
// Random bytes: every chunk's content differs from every other's.
const content = randomBytes(24 * 1024 * 1024 + 123);
const path = join(dir, "file.bin");
let h: ServerHarness;
let agent: Socket;

before(async () => {
  writeFileSync(path, content);
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
});

after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function computerOn(name: string, transport: Transport): Promise<[RunningComputer, string]> {
  const producer = new TestProducer();
  const id = producer.addFile(path, "application/octet-stream");
  const pc = await startHarnessComputer(h, dir, {
    name,
    stateDir: join(dir, `state-${name}`),
    workers: 1,
    transports: [transport],
    services: [producersOnly(producer)],
  });
  return [pc, pc.minter.mint("tool", { id })];
}

/** Pulls every chunk of `chunk` bytes, `WINDOW` requests in flight; checks each chunk's bytes. */
async function pullWindowed(computer: string, handle: string, chunk: number): Promise<number> {
  const offsets: number[] = [];
  for (let o = 0; o < content.length; o += chunk) offsets.push(o);
  let next = 0;
  let checked = 0;
  const lane = async (): Promise<void> => {
    while (next < offsets.length) {
      const offset = offsets[next++]!;
      const req = request("agent-1", computer, {
        blob_handle: handle,
        chunk_offset: offset,
        max_chunk_bytes: chunk,
        blob_format: "binary",
      });
      const [answer] = await emitAck(agent, "client:get_blob", req);
      const ret = GetBlobRetSchema.parse(answer);
      assert.equal(ret.chunk_offset, offset);
      const got = typeof ret.blob === "string" ? Buffer.from(ret.blob, "base64") : ret.blob;
      const want = content.subarray(offset, Math.min(offset + chunk, content.length));
      assert.ok(Buffer.from(got).equals(want), `chunk at ${offset} differs`);
      checked += want.length;
    }
  };
  await Promise.all(Array.from({ length: WINDOW }, lane));
  return checked;
}

for (const transport of ["websocket", "polling"] as const) {
  void test(`binary chunks from reused buffers arrive intact over ${transport}`, async () => {
    const [pc, handle] = await computerOn(`pc-${transport}`, transport);
    try {
      assert.equal(pc.socket.io.engine.transport.name, transport);
      // Sync reads (<= 256 KiB) and thread-pool reads; polling carries binary as base64, so its
      // chunks stay under the 1 MB default buffer limit.
      for (const chunk of [64 * 1024, 200 * 1024, 600 * 1024]) {
        assert.equal(await pullWindowed(`pc-${transport}`, handle, chunk), content.length);
      }
      const { released } = pc.binaryReleases;
      assert.ok(released > 0, `no pooled buffer was reused (released ${released})`);
    } finally {
      await pc.close();
    }
  });
}
