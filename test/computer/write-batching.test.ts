// computer/write-batching.ts, as startComputer wires it: the Computer's answer to a binary get_blob (two
// engine.io packets) goes to its TCP socket in ONE write, after the polling → WebSocket upgrade,
// and the Agent gets the chunk's bytes unchanged. Counted on the Computer's own net.Socket, so
// without the cork this test sees two writes.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { GetBlobRetSchema } from "../../protocol/index.ts";
import {
  clientTcp,
  emitAck,
  request,
  ServerHarness,
  type Socket,
} from "../support/server-harness.ts";
import { countTcpWrites } from "../support/tcp-writes.ts";
import { TestProducer } from "./support/test-producer.ts";
import { startHarnessComputer, producersOnly, upgraded } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-wscork-"));
const content = randomBytes(256 * 1024);
let h: ServerHarness;
let agent: Socket;
let pc: RunningComputer;
let handle = "";

before(async () => {
  writeFileSync(join(dir, "file.bin"), content);
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  const producer = new TestProducer();
  const id = producer.addFile(join(dir, "file.bin"), "application/octet-stream");
  // Polling first, as the Computer always connects: the cork must follow the upgrade.
  pc = await startHarnessComputer(h, dir, { services: [producersOnly(producer)] });
  handle = pc.minter.mint("tool", { id });
  await upgraded(pc);
});

after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

void test("the Computer writes both frames of a binary answer in one write", async () => {
  assert.equal(pc.socket.io.engine.transport.name, "websocket");
  const seen = countTcpWrites(clientTcp(pc.socket));
  const req = request("agent-1", "pc-1", {
    blob_handle: handle,
    chunk_offset: 0,
    max_chunk_bytes: 64 * 1024,
    blob_format: "binary",
  });
  const [answer] = await emitAck(agent, "client:get_blob", req);
  const ret = GetBlobRetSchema.parse(answer);
  assert.ok(Buffer.isBuffer(ret.blob) && ret.blob.equals(content.subarray(0, 64 * 1024)));
  assert.equal(seen.writes, 1, `${seen.writes} writes for one binary answer`);
});
