/**
 * The sideband rules on crafted results (D24): several items judged one by one, `_meta` merging,
 * MIME fallbacks, a spool that cannot take an item, and results whose non-binary parts cannot fit.
 * Real spool and real blob engine; no MCP server needed for these shapes.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { BlobEngine } from "../../../computer/blob/engine.ts";
import { HandleCodec } from "../../../computer/blob/handle.ts";
import { HashCache } from "../../../computer/blob/hash-cache.ts";
import { createToolProducer } from "../../../computer/tools/producer.ts";
import { applySideband, base64DecodedLength } from "../../../computer/tools/sideband.ts";
import { BlobSpool } from "../../../computer/tools/spool.ts";
import { encodedAckBytes, type CallToolResult, type GetBlobRet } from "../../../protocol/index.ts";
import { quietLog } from "../../support/tools-harness.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-sideband-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = { inlineBudget: 1000, maxSize: 50_000, maxHttpBufferSize: 100_000 };

async function setup(spoolMaxBytes = 10_000_000) {
  const spool = await BlobSpool.open({
    dir: join(dir, randomBytes(4).toString("hex")),
    maxBytes: spoolMaxBytes,
    log: quietLog,
  });
  const engine = new BlobEngine({
    codec: new HandleCodec(randomBytes(32)),
    hashCache: new HashCache({ pool: null }),
    maxHttpBufferSize: config.maxHttpBufferSize,
  });
  engine.register(createToolProducer(spool));
  const run = (r: CallToolResult) =>
    applySideband(r, { config, spool, minter: engine, log: quietLog });
  return { spool, engine, run };
}

const b64 = (n: number) => randomBytes(n).toString("base64");

void test("base64DecodedLength is exact for canonical base64", () => {
  for (const n of [0, 1, 2, 3, 4, 5, 999, 1000, 1001]) {
    assert.equal(base64DecodedLength(randomBytes(n).toString("base64")), n);
  }
});

void test("each item is judged alone; _meta keys are kept; text and links pass through", async () => {
  const { run, engine } = await setup();
  const big = b64(5000);
  const r = await run({
    content: [
      { type: "text", text: "t".repeat(5000) },
      { type: "image", data: b64(1000), mimeType: "image/png" },
      { type: "image", data: big, mimeType: "image/jpeg", _meta: { keep: 1 } },
      { type: "resource_link", uri: "file:///x", name: "x" },
      { type: "resource", resource: { uri: "u://1", blob: b64(2000) } },
      { type: "resource", resource: { uri: "u://2", text: "x".repeat(5000) } },
    ],
    structuredContent: { a: 1 },
    meta: { custom: "kept" },
  });
  assert.equal(r.content[0]?.type, "text");
  assert.equal((r.content[1] as { data: string }).data.length, 1336, "≤ budget stays inline");
  const img = r.content[2] as { data: string; mimeType: string; _meta: Record<string, unknown> };
  assert.equal(img.data, "");
  assert.equal(img.mimeType, "image/jpeg");
  assert.equal(img._meta.keep, 1);
  assert.equal(img._meta.a2c_total_size, 5000);
  assert.deepEqual(r.content[3], { type: "resource_link", uri: "file:///x", name: "x" });
  const res = r.content[4] as { resource: { blob: string }; _meta: Record<string, unknown> };
  assert.equal(res.resource.blob, "");
  const pulled = (await engine.getBlob({
    agent: "a",
    req_id: "r",
    computer: "c",
    blob_handle: res._meta.a2c_blob_handle as string,
  })) as GetBlobRet;
  assert.equal(pulled.mime_type, "application/octet-stream", "no mimeType → octet-stream");
  assert.equal((r.content[5] as { resource: { text: string } }).resource.text.length, 5000);
  assert.deepEqual(r.structuredContent, { a: 1 });
  assert.deepEqual(r.meta, { custom: "kept" });
  assert.notEqual(r.isError, true);
});

void test("several over-cap items are each named; the rest is still delivered", async () => {
  const { run } = await setup();
  const r = await run({
    content: [
      { type: "image", data: b64(60_000), mimeType: "image/png" },
      { type: "text", text: "ok" },
      { type: "audio", data: b64(50_001), mimeType: "audio/ogg" },
      { type: "audio", data: b64(50_000), mimeType: "audio/ogg" },
    ],
  });
  assert.equal(r.isError, true);
  assert.match(
    (r.content[0] as { text: string }).text,
    /^content\[0\] \(image, image\/png, 60000 bytes\)/,
  );
  assert.equal((r.content[1] as { text: string }).text, "ok");
  assert.match((r.content[2] as { text: string }).text, /content\[2\].*50001 bytes.*cap of 50000/);
  assert.ok(
    (r.content[3]?._meta as { a2c_blob_handle?: string }).a2c_blob_handle,
    "== cap is allowed",
  );
});

void test("a spool that cannot take an item: it stays inline if it fits, else isError", async () => {
  const { run } = await setup(1500);
  const fits = await run({ content: [{ type: "image", data: b64(2000), mimeType: "image/png" }] });
  assert.notEqual(fits.isError, true);
  assert.equal((fits.content[0] as { data: string }).data.length, 2668, "left inline");

  const image = () => ({ type: "image", data: b64(40_000), mimeType: "image/png" });
  const tooBig = await run({ content: [image(), image(), image()] });
  assert.equal(tooBig.isError, true);
  assert.match((tooBig.content[0] as { text: string }).text, /too large to send/);
  assert.ok(encodedAckBytes(tooBig) <= config.maxHttpBufferSize);
});

void test("huge structuredContent cannot fit: isError, and the answer fits", async () => {
  const { run } = await setup();
  const r = await run({
    content: [{ type: "text", text: "x" }],
    structuredContent: { rows: "y".repeat(200_000) },
    meta: { huge: "z".repeat(200_000) },
  });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent, undefined);
  assert.equal(r.meta, undefined, "meta dropped when it alone would not fit");
  assert.ok(encodedAckBytes(r) <= config.maxHttpBufferSize);
});
