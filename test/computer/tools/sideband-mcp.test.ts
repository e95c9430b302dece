/**
 * The binary sideband end to end over the demo MCP server (protocol.md §8.3; D24): small items
 * stay inline, a 5 MB PNG is spooled and drained byte for byte through `client:get_blob`, embedded
 * resource blobs and audio get the same treatment, many mid-sized images still fit the buffer,
 * an over-cap item and an unfittable text give the decided isError.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { inflateSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { encodePng, readPngHeader } from "../../../scripts/demo/png.ts";
import { patternBytes, pngOfAbout } from "../../../scripts/demo/content.ts";
import { encodedAckBytes } from "../../../protocol/index.ts";
import { sidebandOf, textOf, toolFixture, type ToolFixture } from "../../support/tools-harness.ts";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

let fx: ToolFixture;
before(async () => {
  fx = await toolFixture({ config: { maxSize: 8 * 1024 * 1024 } });
});
after(() => fx.close());

void describe("inline budget", () => {
  void test("a small image stays inline and unchanged", async () => {
    const r = await fx.call("demo__png", { width: 8, height: 8 });
    const item = r.content[1] as { type: string; data: string; mimeType: string; _meta?: object };
    assert.equal(item.type, "image");
    assert.equal(item.mimeType, "image/png");
    assert.ok(Buffer.from(item.data, "base64").equals(encodePng({ width: 8, height: 8 })));
    assert.deepEqual(item._meta, { demo: "png" }, "no sideband keys on an inline item");
    assert.equal(fx.service.spool.count, 0);
  });

  void test("a 5 MB PNG is sidebanded and drains byte for byte", async () => {
    const expected = encodePng({ width: 1400, height: 1200, noiseSeed: 1400 * 7919 + 1200 });
    assert.ok(expected.length > 5_000_000, `PNG is ${expected.length} bytes`);
    const r = await fx.call("demo__png", { width: 1400, height: 1200, noise: true });
    assert.notEqual(r.isError, true);
    const item = r.content[1] as { data: string; mimeType: string; _meta: Record<string, unknown> };
    assert.equal(item.data, "", "inline bytes cleared");
    assert.equal(item.mimeType, "image/png", "mimeType kept");
    const meta = sidebandOf(r, 1);
    assert.equal(item._meta.demo, "png", "other _meta keys kept");
    assert.equal(meta.a2c_total_size, expected.length);
    assert.equal(meta.a2c_sha256, sha(expected));
    assert.ok(encodedAckBytes(r) < 1_000, "the ack is small");

    const { bytes, first } = await fx.pull(meta.a2c_blob_handle);
    assert.ok(bytes.equals(expected), "drained bytes are the original PNG");
    assert.equal(first.sha256, meta.a2c_sha256);
    assert.equal(first.total_size, expected.length);
    assert.equal(first.mime_type, "image/png");
    const dims = readPngHeader(bytes);
    assert.deepEqual(dims, { width: 1400, height: 1200 });
  });

  void test("an embedded resource blob over budget is sidebanded on the item _meta", async () => {
    const r = await fx.call("demo__resource_blob", { size: 100_000, mimeType: "application/pdf" });
    const item = r.content[0] as {
      resource: { uri: string; blob: string; mimeType: string };
      _meta: Record<string, unknown>;
    };
    assert.equal(item.resource.blob, "");
    assert.equal(item.resource.mimeType, "application/pdf");
    assert.equal(item.resource.uri, "demo://blob/100000");
    const meta = sidebandOf(r, 0);
    assert.equal(meta.a2c_total_size, 100_000);
    const { bytes, first } = await fx.pull(meta.a2c_blob_handle);
    assert.ok(bytes.equals(patternBytes(100_000)));
    assert.equal(first.mime_type, "application/pdf");
  });

  void test("an embedded resource blob under budget stays inline", async () => {
    const r = await fx.call("demo__resource_blob", { size: 1000 });
    const item = r.content[0] as { resource: { blob: string }; _meta?: unknown };
    assert.ok(Buffer.from(item.resource.blob, "base64").equals(patternBytes(1000)));
    assert.equal(item._meta, undefined);
  });

  void test("audio over budget is sidebanded; its drained hash matches the marker", async () => {
    const r = await fx.call("demo__audio", { size: 200_000 });
    const meta = sidebandOf(r, 0);
    assert.equal((r.content[0] as { mimeType: string }).mimeType, "audio/wav");
    const { bytes } = await fx.pull(meta.a2c_blob_handle);
    assert.equal(bytes.length, 200_000);
    assert.equal(sha(bytes), meta.a2c_sha256);
  });
});

void describe("buffer fit and hard cap (D24)", () => {
  void test("many mid-sized images under budget still fit the Server's buffer", async () => {
    // 40 images of ~30 KB: each under the 32 KiB budget, together ~1.6 MB of base64.
    const r = await fx.call("demo__many_images", { count: 40, size: 30_000 });
    assert.notEqual(r.isError, true);
    assert.ok(encodedAckBytes(r) <= fx.config.maxHttpBufferSize, `${encodedAckBytes(r)} bytes`);
    let spooled = 0;
    for (let i = 0; i < 40; i++) {
      const item = r.content[i] as { data: string; _meta?: { a2c_blob_handle?: string } };
      const png = pngOfAbout(30_000, i + 1);
      if (item._meta?.a2c_blob_handle) {
        spooled++;
        assert.equal(item.data, "");
        const { bytes } = await fx.pull(item._meta.a2c_blob_handle);
        assert.ok(bytes.equals(png), `image ${i} drains intact`);
      } else {
        assert.ok(Buffer.from(item.data, "base64").equals(png), `image ${i} inline intact`);
      }
    }
    assert.ok(spooled > 0 && spooled < 40, `${spooled} of 40 sidebanded: only what was needed`);
  });

  void test("an item over the hard cap is not sent: isError naming the item", async () => {
    const r = await fx.call("demo__resource_blob", { size: 9 * 1024 * 1024 });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /content\[0\].*demo:\/\/blob\/9437184.*9437184 bytes.*size cap/);
    assert.ok(!JSON.stringify(r).includes("a2c_blob_handle"));
  });

  void test("a text result that cannot fit is an isError explanation, not a dropped socket", async () => {
    const r = await fx.call("demo__huge_text", { size: 2_000_000 });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /too large to send/);
    assert.ok(encodedAckBytes(r) < 2_000);
  });

  void test("the PNG really is a PNG: its IDAT inflates to the pixel rows", () => {
    const png = encodePng({ width: 3, height: 2 });
    const len = png.readUInt32BE(33);
    const idat = png.subarray(41, 41 + len);
    assert.equal(png.subarray(37, 41).toString("latin1"), "IDAT");
    assert.equal(inflateSync(idat).length, 2 * (3 * 3 + 1));
  });
});
