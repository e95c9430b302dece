/**
 * The SDK's `uploadBlob` through the real Server into our Computers' upload stores: a Buffer, a
 * stream and a file land byte for byte, in either carriage (upstream's Agent ↔ store cases too:
 * sizes 1, 5, 1000 and 262,151 named `*_paring.bin`); every 4019 reason the SDK can meet arrives
 * typed (no landing root, over the cap, bytes that do not hash to the declaration); a Computer at
 * its concurrent-upload cap is waited out from offset 0; an abort leaves no stored file.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import {
  UploadForbiddenError,
  UploadIntegrityError,
  UploadTooLargeError,
} from "../../agent/errors.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { UPLOAD_WRITEBACK_BYTES } from "../../computer/upload/store.ts";
import { testBytes } from "../support/agent-fake-computer.ts";
import {
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  type AgentStack,
} from "../support/agent-stack.ts";

let stack: AgentStack;
let agent: AgentClient;
const computers: RunningComputer[] = [];
let roots: { pc: string; one: string };
/** The SDK's warnings (an upload starting again logs one). */
const warned = new EventEmitter();

before(async () => {
  stack = await startAgentStack();
  roots = { pc: join(stack.dir, "land-pc"), one: join(stack.dir, "land-one") };
  computers.push(
    await inProcessComputer(stack, "pc", { landingRoot: roots.pc }),
    await inProcessComputer(stack, "one", {
      landingRoot: roots.one,
      upload: { maxConcurrent: 1, maxBytes: 4096 },
    }),
    await inProcessComputer(stack, "bare"),
  );
  agent = new AgentClient({
    url: stack.url,
    token: stack.token,
    logger: { info: () => undefined, warn: (_o, msg) => void warned.emit("warn", msg) },
  });
  await agent.connect();
  await agent.joinOffice(stack.office);
  for (const c of ["pc", "one", "bare"]) await agent.waitForComputer(c, { timeoutMs: 30_000 });
});
after(async () => {
  await agent?.close();
  for (const c of computers) await c.close();
  await stack?.close();
});

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");
/** What the landing root holds besides the store's own folder. */
const stored = (root: string): string[] => readdirSync(root).filter((n) => n !== ".a2c-upload");

void test("a Buffer, a stream and a file land byte for byte, binary carriage by default", async () => {
  const data = testBytes(3 * 1024 * 1024 + 17, 11);
  const fromBuffer = await agent.uploadBlob("pc", data, { nameHint: "report v1.pdf" });
  assert.ok(fromBuffer.landingPath.startsWith(`${roots.pc}/`));
  assert.match(fromBuffer.landingPath, /\/[0-9a-f]{32}_report_v1\.pdf$/);
  assert.equal(fromBuffer.carriage, "binary");
  assert.ok(readFileSync(fromBuffer.landingPath).equals(data));
  assert.equal(fromBuffer.sha256, sha256(data));

  const pieces = [data.subarray(0, 100), data.subarray(100, 2_000_000), data.subarray(2_000_000)];
  const fromStream = await agent.uploadBlob("pc", Readable.from(pieces));
  assert.ok(readFileSync(fromStream.landingPath).equals(data));

  const file = join(stack.dir, "src.bin");
  const want = await writeRandomFile(file, 5 * 1024 * 1024 + 3);
  const fromFile = await agent.uploadBlob("pc", file, { binary: false });
  assert.equal(fromFile.carriage, "base64");
  assert.equal(sha256(readFileSync(fromFile.landingPath)), want);
  assert.ok(fromFile.stats.requests > 2, "several chunks");
});

void test("a file past the store's background writeback step lands byte for byte", async () => {
  // The Computer starts an fdatasync every UPLOAD_WRITEBACK_BYTES written; the final chunk then
  // waits for the one in flight before its own fsync.
  const file = join(stack.dir, "past-writeback.bin");
  const want = await writeRandomFile(file, UPLOAD_WRITEBACK_BYTES + 3 * 1024 * 1024 + 5);
  const r = await agent.uploadBlob("pc", file);
  assert.equal(r.carriage, "binary");
  assert.equal(sha256(readFileSync(r.landingPath)), want);
  rmSync(r.landingPath);
});

void test("upstream's Agent ↔ store sizes: 1, 5, 1000, 262,151 bytes named *_paring.bin", async () => {
  for (const n of [1, 5, 1000, 262_151]) {
    const data = testBytes(n, n);
    const r = await agent.uploadBlob("pc", data, { nameHint: "paring.bin" });
    assert.match(r.landingPath, /_paring\.bin$/);
    assert.ok(readFileSync(r.landingPath).equals(data), `${n} bytes`);
  }
});

void test("typed 4019s: no landing root is forbidden, over the cap too_large", async () => {
  await assert.rejects(agent.uploadBlob("bare", testBytes(10)), (e) => {
    assert.ok(e instanceof UploadForbiddenError, String(e));
    return e.code === 4019 && e.reason === "forbidden";
  });
  await assert.rejects(agent.uploadBlob("one", testBytes(4097)), (e) => {
    assert.ok(e instanceof UploadTooLargeError, String(e));
    return e.totalSize === 4097;
  });
  assert.ok(!existsSync(roots.one), "too_large creates nothing, not even the landing root");
});

void test("bytes that do not hash to the declaration: integrity, nothing stored", async () => {
  const before = stored(roots.pc).length;
  const data = Buffer.from(testBytes(200_000, 4));
  // The caller changes the Buffer after it was hashed: the Computer's digest differs.
  const r = agent.uploadBlob("pc", data, {
    chunkBytes: 16_384,
    onProgress: () => void data.fill(0, 100_000),
  });
  await assert.rejects(r, (e) => {
    assert.ok(e instanceof UploadIntegrityError, String(e));
    return e.reason === "integrity";
  });
  assert.equal(stored(roots.pc).length, before);
});

void test("a Computer at its upload cap: busy, backed off, sent again from 0", async () => {
  const data = testBytes(3000, 8);
  // Another session holds the only slot until its final chunk.
  const first = await agent.putBlobChunk("one", {
    offset: 0,
    eof: false,
    blob: data.subarray(0, 1000).toString("base64"),
    declaration: { totalSize: 3000, sha256: sha256(data) },
  });
  const refused = new Promise<void>((resolve) => warned.once("warn", () => resolve()));
  const upload = agent.uploadBlob("one", data, { nameHint: "second" });
  await refused; // the upload was answered busy and backs off now
  await agent.putBlobChunk("one", {
    uploadId: first.uploadId,
    offset: 1000,
    eof: true,
    blob: data.subarray(1000).toString("base64"),
  });
  const r = await upload;
  assert.ok(readFileSync(r.landingPath).equals(data));
  assert.ok(r.stats.busy >= 1 && r.stats.restarts >= 1, JSON.stringify(r.stats));
});

void test("abort mid-upload: rejected at once, no stored file", async () => {
  const before = stored(roots.pc).length;
  const stop = new AbortController();
  const r = agent.uploadBlob("pc", testBytes(8 * 1024 * 1024, 9), {
    signal: stop.signal,
    onProgress: (p) => {
      if (p.bytes > 0) stop.abort(new Error("stop now"));
    },
  });
  await assert.rejects(r, /stop now/);
  assert.equal(stored(roots.pc).length, before);
});
