// @both-transports
// server/transport/session-writes.ts (the session meter) counts a session's outbound bytes from engine.io's events, and reads
// engine.io / ws internals to do it. This holds it to what the installed engine.io really holds:
// a slow WebSocket Agent's backlog is all counted (write buffer and transport), every count
// returns to exactly 0 once the Agent has read everything, a polling session is counted too, and
// a session of another shape is refused (null) rather than miscounted; progress reads ws's TCP
// socket and Node's writeQueueSize, drop() the polling transport's pending GET. A dependency
// update that changes any of it fails here.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import {
  meterSession,
  packetBytes,
  type SessionMeter,
} from "../../server/transport/session-writes.ts";
import {
  ServerHarness,
  clientTcp,
  emitAck,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

interface EnginePacket {
  type: string;
  data?: unknown;
  options?: { wsPreEncodedFrame?: Buffer[] };
}
interface EngineSession {
  transport: {
    name: string;
    writable: boolean;
    socket?: { bufferedAmount: number; _socket?: { _handle?: { writeQueueSize?: unknown } } };
    req?: { socket?: unknown } | null;
  };
  writeBuffer: EnginePacket[];
  on(event: "packetCreate" | "flush", fn: (p: EnginePacket) => void): void;
  off(event: "packetCreate" | "flush", fn: (p: EnginePacket) => void): void;
}

const SIZE = 64 * 1024;
let h: ServerHarness;
before(async () => {
  // The chunk requests below name no size (each reserves a whole answer) and are meant to pile
  // up answers for a client that does not read: the unread bound would refuse most of them.
  h = await ServerHarness.start({ maxUnreadBytes: 0 });
});
after(() => h.close());

/** Agent and Computer in `office`; the Computer answers each get_blob with SIZE bytes. */
async function pair(office: string, transports: ("polling" | "websocket")[]) {
  const agent = await h.agent(office, "agent", { transports });
  const pc = await h.computer(office, "pc", { transports: ["websocket"] });
  pc.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack(wholeChunkAck(randomBytes(SIZE).toString("base64"), req.req_id)),
  );
  const session = h.sessionOf<EngineSession>(agent);
  const meter = h.server.outbound.accountOf(session)?.meter;
  assert.ok(meter, "the installed engine.io has the shape the session meter reads");
  return { agent, session, meter };
}

const pull = (agent: Socket, i: number): Promise<unknown[]> =>
  emitAck(agent, "client:get_blob", request("agent", "pc", { blob_handle: "h", req_id: `r${i}` }));

/** Resolves once `n` message packets were created for `session`. */
function messages(session: EngineSession, n: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    const onPacket = (p: EnginePacket): void => {
      if (p.type !== "message" || ++seen < n) return;
      session.off("packetCreate", onPacket);
      resolve();
    };
    session.on("packetCreate", onPacket);
  });
}

void test("a WebSocket Agent that stops reading: its whole backlog is counted, then 0", async () => {
  const { agent, session, meter } = await pair("office-ws", ["websocket"]);
  const tcp = clientTcp(agent);
  tcp.pause();
  const n = 240; // ~21 MB of base64: well past loopback's socket buffers
  const created = messages(session, n);
  const answers = Array.from({ length: n }, (_, i) => pull(agent, i));
  await created;
  const answerBytes = Math.ceil(SIZE / 3) * 4;
  const inBuffer = session.writeBuffer.reduce((sum, p) => sum + packetBytes(p), 0);
  const inWs = session.transport.socket?.bufferedAmount ?? 0;
  assert.equal(session.transport.writable, false, "the transport waits for the Agent");
  assert.ok(inBuffer > 0, "answers wait in engine.io's write buffer");
  // Everything engine.io and ws still hold is counted (ws adds a few bytes of frame header per
  // answer); nothing more than what was created.
  assert.ok(meter.queued >= inBuffer + inWs - 16 * n, `${meter.queued} < ${inBuffer} + ${inWs}`);
  assert.ok(meter.queued <= n * (answerBytes + 512), `${meter.queued}`);
  assert.equal(h.server.outbound.queuedTotal, meter.queued);
  // Progress reads ws's TCP socket (`_socket`) and Node's `_handle.writeQueueSize`: bytes libuv
  // holds because the kernel's buffers are full. Renamed, they would read as 0 without an error.
  const unsent = session.transport.socket?._socket?._handle?.writeQueueSize;
  assert.ok(typeof unsent === "number" && unsent > 0, `writeQueueSize ${String(unsent)}`);
  const buffered = session.transport.socket?.bufferedAmount ?? 0;
  assert.equal(meter.progress(), meter.drained - buffered - unsent);
  const before = meter.progress();
  tcp.resume();
  assert.equal((await Promise.all(answers)).length, n);
  await settled(meter);
  assert.equal(meter.queued, 0);
  assert.notEqual(meter.progress(), before, "bytes moved");
});

void test("a polling Agent: counted while its responses are out, 0 when read", async () => {
  const { agent, session, meter } = await pair("office-polling", ["polling"]);
  assert.equal(meter.transport, "polling");
  // drop() destroys the pending GET's socket (engine.io's private `req`): it must be there while
  // the client long-polls.
  for (let i = 0; i < 1000 && !session.transport.req; i++) await new Promise(setImmediate);
  assert.ok(session.transport.req?.socket, "engine.io's polling transport holds its GET as req");
  let most = 0;
  const onFlush = (): void => void (most = Math.max(most, meter.queued));
  session.on("flush", onFlush); // after the meter's own listener
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => pull(agent, i)));
  session.off("flush", onFlush);
  assert.equal(answers.length, 8);
  assert.ok(most >= Math.ceil(SIZE / 3) * 4, `at least one answer was counted (${most})`);
  await settled(meter);
  assert.equal(meter.queued, 0);
});

void test("a session of another shape is not metered (the caller logs it)", () => {
  assert.equal(
    meterSession({}, () => undefined),
    null,
  );
  assert.equal(
    meterSession({ on() {}, close() {}, transport: { name: "websocket" } }, () => 0),
    null,
  );
});

/** The last drain (ws send callback, response finish) lands a turn after the ack arrives. */
async function settled(meter: SessionMeter): Promise<void> {
  for (let i = 0; i < 1000 && meter.queued > 0; i++) await new Promise((r) => setImmediate(r));
}
