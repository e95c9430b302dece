// @both-transports
/**
 * Compressed carriage through the real Server (docs/protocol.md §6.11; D13, D63): a plain
 * socket.io-client Agent asks for `content_encoding` and pulls text and incompressible files from
 * a real Computer, in base64 and binary carriage, with huge `max_chunk_bytes` (the chunk the
 * buffer limit allows): the relay's schema check and its reservation take the request, the
 * answers come through unchanged and decode to the file, and the Computer is never dropped for an
 * oversized ack.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { RunningComputer } from "../../computer/computer.ts";
import { GetBlobRetSchema } from "../../protocol/index.ts";
import { textContent } from "../../bench/lib/text-corpus.ts";
import { emitAck, request, ServerHarness, type Socket } from "../support/server-harness.ts";
import { TestProducer } from "./support/test-producer.ts";
import { startHarnessComputer, producersOnly } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-pull-coded-"));
const text = textContent("log", "server-pull-coded", 3 * 1024 * 1024 + 17);
const noise = randomBytes(2 * 1024 * 1024 + 5);
let h: ServerHarness;
let agent: Socket;
let pc: RunningComputer;
const handles: Record<"text" | "noise", string> = { text: "", noise: "" };

before(async () => {
  const producer = new TestProducer();
  writeFileSync(join(dir, "app.log"), text);
  writeFileSync(join(dir, "noise.bin"), noise);
  const textId = producer.addFile(join(dir, "app.log"), "text/plain");
  const noiseId = producer.addFile(join(dir, "noise.bin"), "application/octet-stream");
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await startHarnessComputer(h, dir, { workers: 1, services: [producersOnly(producer)] });
  handles.text = pc.minter.mint("tool", { id: textId });
  handles.noise = pc.minter.mint("tool", { id: noiseId });
});

after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Pulls a whole file chunk by chunk; returns the decoded bytes, codings seen and wire bytes. */
async function pull(handle: string, extra: Record<string, unknown>) {
  const parts: Buffer[] = [];
  const codings = new Set<string>();
  let wire = 0;
  let offset = 0;
  for (;;) {
    const req = request("agent-1", "pc-1", { blob_handle: handle, chunk_offset: offset, ...extra });
    const [answer] = await emitAck(agent, "client:get_blob", req);
    const ret = GetBlobRetSchema.parse(answer);
    const carried =
      typeof ret.blob === "string" ? Buffer.from(ret.blob, "base64") : Buffer.from(ret.blob);
    wire += typeof ret.blob === "string" ? ret.blob.length : carried.length;
    const coding = ret.content_encoding ?? "identity";
    codings.add(coding);
    const bytes =
      coding === "br"
        ? brotliDecompressSync(carried)
        : coding === "gzip"
          ? gunzipSync(carried)
          : carried;
    if (ret.content_encoding !== undefined) assert.equal(ret.decoded_size, bytes.length);
    else assert.equal(ret.decoded_size, undefined);
    assert.equal(ret.chunk_offset, offset);
    parts.push(bytes);
    offset += bytes.length;
    if (ret.eof) break;
  }
  return { bytes: Buffer.concat(parts), codings, wire };
}

const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

for (const blob_format of [undefined, "binary"] as const) {
  const carriage = blob_format ?? "base64";
  void test(`text comes coded through the relay, ${carriage}, huge chunks included`, async () => {
    for (const max_chunk_bytes of [undefined, 50_000_000]) {
      const got = await pull(handles.text, {
        content_encoding: ["br", "gzip"],
        ...(blob_format ? { blob_format } : {}),
        ...(max_chunk_bytes ? { max_chunk_bytes } : {}),
      });
      assert.equal(sha(got.bytes), sha(text));
      assert.deepEqual([...got.codings], ["br"]);
      assert.ok(got.wire < text.length / 3, `${got.wire} wire bytes for ${text.length}`);
    }
    assert.ok(pc.joined && pc.socket.connected);
  });

  void test(`incompressible bytes come identity at the largest chunk, ${carriage}`, async () => {
    const got = await pull(handles.noise, {
      content_encoding: "gzip",
      max_chunk_bytes: 50_000_000,
      ...(blob_format ? { blob_format } : {}),
    });
    assert.equal(sha(got.bytes), sha(noise));
    assert.deepEqual([...got.codings], ["identity"]);
    assert.ok(pc.joined && pc.socket.connected);
  });
}
