// @both-transports
/**
 * Through the real Server (protocol.md §6.2–§6.4, D16, D19): a plain socket.io-client Agent pulls a
 * whole file from a real Computer, in base64 and in binary carriage, including a request for a
 * huge chunk (clamped: the Computer is never dropped for an oversized ack); the Computer rejoins
 * its office after its connection drops.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { GetBlobRetSchema, type GetBlobRet } from "../../protocol/index.ts";
import {
  emitAck,
  request,
  ServerHarness,
  waitFor,
  type Socket,
} from "../support/server-harness.ts";
import { TestProducer } from "./support/test-producer.ts";
import { startHarnessComputer, producersOnly } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-pull-"));
const content = randomBytes(3 * 1024 * 1024 + 17);
const sha = createHash("sha256").update(content).digest("hex");
let h: ServerHarness;
let agent: Socket;
let pc: RunningComputer;
let handle: string;

before(async () => {
  const path = join(dir, "file.bin");
  writeFileSync(path, content);
  const producer = new TestProducer();
  const id = producer.addFile(path, "application/pdf");
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await startHarnessComputer(h, dir, { workers: 1, services: [producersOnly(producer)] });
  handle = pc.minter.mint("tool", { id });
});

after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function pull(
  extra: Record<string, unknown>,
): Promise<{ bytes: Buffer; chunks: GetBlobRet[] }> {
  const chunks: GetBlobRet[] = [];
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const req = request("agent-1", "pc-1", { blob_handle: handle, chunk_offset: offset, ...extra });
    const [answer] = await emitAck(agent, "client:get_blob", req);
    const ret = GetBlobRetSchema.parse(answer);
    assert.equal(ret.req_id, req.req_id);
    const bytes =
      typeof ret.blob === "string" ? Buffer.from(ret.blob, "base64") : Buffer.from(ret.blob);
    chunks.push(ret);
    parts.push(bytes);
    offset += bytes.length;
    if (ret.eof) break;
  }
  return { bytes: Buffer.concat(parts), chunks };
}

void test("the Agent pulls the whole file through the Server (default chunks, base64)", async () => {
  const { bytes, chunks } = await pull({});
  assert.ok(bytes.equals(content));
  assert.equal(createHash("sha256").update(bytes).digest("hex"), sha);
  assert.equal(chunks.length, Math.ceil(content.length / (90 * 1024)));
  for (const c of chunks) {
    assert.equal(c.sha256, sha);
    assert.equal(c.total_size, content.length);
    assert.equal(c.mime_type, "application/pdf");
    assert.equal(c.blob_handle, handle);
  }
});

void test("huge max_chunk_bytes is clamped below maxHttpBufferSize; the Computer stays", async () => {
  const { bytes, chunks } = await pull({ max_chunk_bytes: 50_000_000 });
  assert.ok(bytes.equals(content));
  assert.ok(chunks.length >= 5 && chunks.length <= 6, `${chunks.length} chunks`);
  assert.ok(pc.joined && pc.socket.connected);
});

void test("binary carriage (D19) through the relay, huge chunks included", async () => {
  const { bytes, chunks } = await pull({ blob_format: "binary", max_chunk_bytes: 50_000_000 });
  assert.ok(bytes.equals(content));
  for (const c of chunks) assert.equal(c.blob_format, "binary");
  assert.ok(pc.joined && pc.socket.connected);
});

void test("after its connection drops, the Computer rejoins its office and serves again", async () => {
  const back = waitFor<{ computer?: string }>(
    agent,
    "notify:enter_office",
    (n) => n.computer === "pc-1",
    15_000,
  );
  pc.socket.io.engine.close(); // as a network drop: socket.io reconnects by itself
  await back;
  const { bytes } = await pull({ max_chunk_bytes: 1_000_000 });
  assert.ok(bytes.equals(content));
});
