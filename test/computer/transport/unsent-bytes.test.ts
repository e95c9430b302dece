/**
 * The Computer's unsent bytes (computer/transport/index.ts `unsentBytes`) read three private
 * fields in every mode, stock included: engine.io-client's `writeBuffer` and `_prevBufferLen`
 * and ws's `bufferedAmount`. A library release that renames one would read it as 0 (or count a
 * packet twice) without an error, so this holds the sum to the bytes really waiting: a real
 * socket.io Server on port 0 stops reading a Computer-side client's WebSocket; what the client
 * sends must be counted, less what the kernel's buffers took and never twice; two packets sent
 * in one turn (one handed to ws, one left in engine.io's buffer) add exactly their bytes; and
 * the count falls to exactly 0 once the Server reads again. The drain wake-ups listen on ws's
 * TCP socket (`_socket`, private too): it must be there.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Socket as NetSocket, type AddressInfo } from "node:net";
import { test } from "node:test";
import { Server } from "socket.io";
import { io as connect } from "socket.io-client";
import { createAnswerTransport } from "../../../computer/transport/index.ts";

const PART = 256 * 1024;
const PARTS = 48;
/** A packet's text: engine.io's type digit, then `2["part","x…"]`. */
const PACKET = PART + 13;
/** A WebSocket frame's header as ws counts it unsent (client frames are masked). */
const FRAME = 14;
/** Loopback socket buffers (both ends, autotuned) hold at most a few MiB; counted generously. */
const KERNEL_MOST = 16 * 1024 * 1024;

/** Resolves once `read()` has returned the same value `times` times in a row, a turn apart. */
async function settled(read: () => number, times = 5): Promise<number> {
  let last = read();
  for (let same = 0; same < times;) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = read();
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return last;
}

void test("unsent bytes count what waits in engine.io's buffer and in ws, once each, in stock mode", async () => {
  const http = createServer();
  const server = new Server(http, { maxHttpBufferSize: 2 * PART, transports: ["websocket"] });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  const joined = new Promise<{ pause(): void; resume(): void }>((resolve) =>
    server.on("connection", (socket) => {
      const ws = (socket.conn.transport as unknown as { socket?: { _socket?: unknown } }).socket;
      resolve(ws!._socket as { pause(): void; resume(): void });
    }),
  );
  let received = 0;
  server.on("connection", (socket) => socket.on("part", () => received++));
  const client = connect(`http://127.0.0.1:${port}`, { transports: ["websocket"] });
  const transport = createAnswerTransport(client.io, { mode: "stock" });
  let wakes = 0;
  transport.onWritable(() => wakes++);
  try {
    const tcp = await joined;
    // The drain wake-ups listen on ws's TCP socket (its private `_socket`), in every mode.
    const live = client.io.engine.transport as unknown as { ws?: { _socket?: unknown } };
    assert.ok(live.ws?._socket instanceof NetSocket, "ws keeps its TCP socket as _socket");
    tcp.pause();
    const part = "x".repeat(PART);
    for (let i = 0; i < 2 * PARTS; i++) client.emit("part", part);
    const sent = 2 * PARTS * PACKET;
    const blocked = await settled(() => transport.unsentBytes());
    assert.ok(blocked <= sent + 2 * PARTS * FRAME, `${blocked} unsent of ${sent} sent`);
    assert.ok(blocked >= sent - KERNEL_MOST, `${blocked} unsent of ${sent} sent: bytes not seen`);
    // Two more in one turn: the first is handed to ws at once (engine.io's `_prevBufferLen` says
    // so while it stays in `writeBuffer` until the drain), the second waits in `writeBuffer`.
    client.emit("part", part);
    client.emit("part", part);
    const added = transport.unsentBytes() - blocked;
    assert.ok(
      added >= 2 * PACKET && added <= 2 * PACKET + FRAME,
      `two packets of ${PACKET} bytes added ${added}: one missed or counted twice`,
    );
    tcp.resume();
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (received === 2 * PARTS + 2) resolve();
        else setTimeout(check, 20);
      };
      check();
    });
    assert.equal(await settled(() => transport.unsentBytes()), 0);
    assert.ok(wakes > 0, "the drains woke the scheduler's listeners");
  } finally {
    client.close();
    await server.close();
  }
});
