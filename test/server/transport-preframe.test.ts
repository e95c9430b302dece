// server/transport/preframe.ts: a long text packet to a WebSocket Agent waits in engine.io as a
// ready frame (Buffers, no string), reaches the Agent byte for byte, and a slow Agent's backlog
// holds no chunk strings; polling sessions and short packets keep the string path.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import WebSocket from "ws";
import {
  MIN_PREFRAMED_CHARS,
  probePreframe,
  textFrameHead,
} from "../../server/transport/preframe.ts";
import {
  ServerHarness,
  clientTcp,
  emitAck,
  request,
  skipUnlessFastPaths,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
let pc: Socket;
before(async () => {
  // The slow-Agent test piles up answers of chunk requests that name no size for a client that
  // does not read: the unread bound (server/outbound.ts) would refuse most of them.
  h = await ServerHarness.start({ maxUnreadBytes: 0 });
  ({ agent, pc } = await h.webSocketPair());
  // The Computer answers every get_blob with `size` bytes of base64 named in the request.
  pc.on("client:get_blob", (req: { req_id: string; size: number }, ack: (a: unknown) => void) => {
    ack(wholeChunkAck(randomBytes(req.size).toString("base64"), req.req_id));
  });
});
after(() => h.close());

interface EnginePacket {
  type: string;
  data?: unknown;
  options?: { wsPreEncodedFrame?: Buffer[] };
}
interface EngineSession {
  transport: { name: string; writable: boolean };
  writeBuffer: EnginePacket[];
  on(event: "packetCreate", fn: (p: EnginePacket) => void): void;
  off(event: "packetCreate", fn: (p: EnginePacket) => void): void;
}

const sessionOf = (socket: Socket): EngineSession => h.sessionOf<EngineSession>(socket);

/** The message packets the Server creates for `socket`'s session while `run` runs. */
async function created<T>(socket: Socket, run: () => Promise<T>): Promise<[T, EnginePacket[]]> {
  const session = sessionOf(socket);
  const seen: EnginePacket[] = [];
  const onPacket = (p: EnginePacket): void => void (p.type === "message" && seen.push(p));
  session.on("packetCreate", onPacket);
  try {
    return [await run(), seen];
  } finally {
    session.off("packetCreate", onPacket);
  }
}

/** The text packets `socket`'s engine receives, as they come off the wire. */
function incomingTexts(socket: Socket): string[] {
  const seen: string[] = [];
  socket.io.engine.on("packet", (p: { type: string; data?: unknown }) => {
    if (p.type === "message" && typeof p.data === "string") seen.push(p.data);
  });
  return seen;
}

const getBlob = (socket: Socket, size: number, agentName = "agent-1"): Promise<unknown[]> =>
  emitAck(socket, "client:get_blob", request(agentName, "pc-1", { blob_handle: "h", size }));

/** ws's own frame builder (untyped: ws ships no declarations for `Sender`). */
const wsFrame = (
  WebSocket as unknown as { Sender: { frame(this: void, d: Buffer, o: object): Buffer[] } }
).Sender.frame;

void test("the frame head is ws's own for every length class, plus engine.io's `4`", () => {
  for (const payload of [1, 125, 126, 127, 65_535, 65_536, 70_000, 3_000_000]) {
    const [wsHead] = wsFrame(Buffer.alloc(payload), {
      fin: true,
      opcode: 1,
      mask: false,
      readOnly: false,
      rsv1: false,
    });
    assert.deepEqual(
      textFrameHead(payload),
      Buffer.concat([wsHead!, Buffer.from("4")]),
      `${payload}`,
    );
  }
});

const skip = skipUnlessFastPaths("preframing");

void test("the probe accepts the installed socket.io, engine.io and ws", () => {
  assert.equal(probePreframe(), null);
});

void test(
  "a 64 KiB chunk ack leaves as a frame of exactly its text, and arrives intact",
  { skip },
  async () => {
    const wire = incomingTexts(agent);
    const [[answer], packets] = await created(agent, () => getBlob(agent, 64 * 1024));
    assert.equal(packets.length, 1);
    const [packet] = packets;
    assert.equal(packet!.data, undefined, "engine.io holds no string for the packet");
    const frame = packet!.options?.wsPreEncodedFrame;
    assert.ok(Array.isArray(frame) && frame.length === 2 && frame.every((b) => Buffer.isBuffer(b)));
    // What the Agent's engine decoded is the frame's payload after the `4`.
    const text = wire.at(-1)!;
    assert.ok(text.length >= MIN_PREFRAMED_CHARS);
    const whole = Buffer.concat(frame);
    const head = textFrameHead(Buffer.byteLength(text) + 1);
    assert.deepEqual(whole.subarray(0, head.length), head);
    assert.equal(whole.subarray(head.length).toString("utf8"), text);
    assert.equal((answer as { blob: string }).blob.length, Math.ceil((64 * 1024) / 3) * 4);
  },
);

void test("a short ack keeps the string path", async () => {
  const [[answer], packets] = await created(agent, () => getBlob(agent, 1024));
  assert.equal(packets.length, 1);
  assert.equal(typeof packets[0]!.data, "string");
  assert.equal(packets[0]!.options?.wsPreEncodedFrame, undefined);
  assert.equal((answer as { eof: boolean }).eof, true);
});

void test(
  "a slow Agent's backlog waits as frames; every answer arrives once it reads",
  { skip },
  async () => {
    // The Agent stops reading its TCP socket: once the kernel's buffers are full the Server's
    // transport stays busy and engine.io keeps the next answers in the session's writeBuffer.
    const tcp = clientTcp(agent);
    tcp.pause();
    const session = sessionOf(agent);
    const n = 240; // ~21 MB of base64: well past loopback's socket buffers
    let relayed = 0;
    const all = await created(agent, async () => {
      const answers = Array.from({ length: n }, (_, i) =>
        emitAck(
          agent,
          "client:get_blob",
          request("agent-1", "pc-1", { blob_handle: "h", size: 64 * 1024, req_id: `slow-${i}` }),
        ),
      );
      // Every answer has been handed to engine.io once n packets exist; look at the backlog then.
      await new Promise<void>((resolve) => {
        const onPacket = (p: EnginePacket): void => {
          if (p.type === "message" && ++relayed === n) {
            session.off("packetCreate", onPacket);
            resolve();
          }
        };
        session.on("packetCreate", onPacket);
      });
      assert.equal(session.transport.writable, false, "the transport waits for the slow Agent");
      const waiting = session.writeBuffer.filter((p) => p.type === "message");
      assert.ok(waiting.length > 0, "answers wait in engine.io's write buffer");
      for (const p of waiting) {
        assert.equal(p.data, undefined, "a waiting answer is no string");
        assert.ok(p.options?.wsPreEncodedFrame?.every((b) => Buffer.isBuffer(b)));
      }
      tcp.resume();
      return Promise.all(answers);
    });
    const [answers] = all;
    assert.equal(answers.length, n);
    answers.forEach(([a], i) => {
      const answer = a as { blob: string; req_id: string };
      assert.equal(answer.req_id, `slow-${i}`);
      assert.equal(answer.blob.length, 87_384);
    });
  },
);

void test("a polling Agent gets the same long ack through the string path", async () => {
  const slow = await h.agent("office-2", "agent-2", { transports: ["polling"] });
  await h
    .computer("office-2", "pc-1", { transports: ["websocket"] })
    .then((c) =>
      c.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
        ack({ req_id: req.req_id, blob: "A".repeat(90_000), eof: true, chunk_offset: 0 }),
      ),
    );
  const [[answer], packets] = await created(slow, () => getBlob(slow, 0, "agent-2"));
  assert.equal(typeof packets[0]!.data, "string");
  assert.equal(packets[0]!.options?.wsPreEncodedFrame, undefined);
  assert.equal((answer as { blob: string }).blob, "A".repeat(90_000));
});
