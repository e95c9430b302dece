/**
 * The session meter's progress (server/transport/session-writes.ts) reads Node's private
 * `socket._handle.writeQueueSize`: libuv's bytes of a TCP socket not yet taken by the kernel. A
 * Node release that renamed it would read 0 without an error, and a long frame the kernel takes
 * slowly would look like no progress. This holds it to what a real loopback socket does: while the
 * peer reads nothing the field is a number, grows past zero as the kernel's buffers fill, and goes
 * back to 0 once the peer has read everything.
 */
import assert from "node:assert/strict";
import { createConnection, createServer, type AddressInfo, type Socket } from "node:net";
import { test } from "node:test";

const writeQueueSize = (s: Socket): unknown =>
  (s as unknown as { _handle?: { writeQueueSize?: unknown } | null })._handle?.writeQueueSize;

void test("a TCP socket's writeQueueSize counts what the kernel has not taken, and empties", async () => {
  let writer: Socket | undefined;
  const server = createServer((s) => (writer = s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const reader = createConnection((server.address() as AddressInfo).port, "127.0.0.1");
  reader.pause();
  try {
    await new Promise((resolve) => reader.once("connect", resolve));
    while (!writer) await new Promise((resolve) => server.once("connection", resolve));
    assert.equal(writeQueueSize(writer), 0);
    const block = Buffer.alloc(1024 * 1024);
    // Writes until libuv holds bytes the kernel refused: a paused peer's buffers fill.
    let written = 0;
    while (!(Number(writeQueueSize(writer)) > 0) && written < 256 * block.length) {
      writer.write(block);
      written += block.length;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const queued = writeQueueSize(writer);
    assert.equal(typeof queued, "number");
    assert.ok((queued as number) > 0, `nothing queued after ${written} bytes to a paused peer`);
    let read = 0;
    const all = new Promise<void>((resolve) =>
      reader.on("data", (d: Buffer) => {
        read += d.length;
        if (read === written) resolve();
      }),
    );
    reader.resume();
    await all;
    assert.equal(writeQueueSize(writer), 0);
  } finally {
    reader.destroy();
    writer?.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});
