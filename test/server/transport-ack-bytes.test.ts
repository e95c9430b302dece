// server/transport/ack-bytes.ts: a long text ACK from a WebSocket client reaches socket.io as the
// bytes of its message; the decoder checks and keeps them, the encoder writes them back into the
// Agent's frame; everything else is decoded to text exactly as before. Unit level on engine.io's
// real WebSocket transport and socket.io-parser, then end to end on a real Server.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import fc from "fast-check";
import { PacketType, type Packet } from "socket.io-parser";
import {
  AckFrameText,
  MIN_ACK_BYTES,
  isAckMessage,
  keepAckBytes,
  probeAckBytes,
} from "../../server/transport/ack-bytes.ts";
import { AckText, checkAckBytes, checkAckJson } from "../../server/transport/ack-text.ts";
import { probeWebSocketTransport } from "../../server/transport/installed.ts";
import { engineMessageFrame } from "../../server/transport/preframe.ts";
import {
  AckBytesEncoder,
  AckTextDecoder,
  AckTextEncoder,
} from "../../server/transport/raw-acks.ts";
import {
  answerNextRaw,
  emitAck,
  incomingAckTexts,
  request,
  skipUnlessFastPaths,
  webSocketPairSuite,
} from "../support/server-harness.ts";

type EnginePacket = { type: string; data?: unknown };

/** engine.io's WebSocket transport around a stand-in for ws, with the wrapper applied. */
function wrappedTransport(): { ws: EventEmitter; packets: EnginePacket[] } {
  const ws = new EventEmitter();
  const transport = probeWebSocketTransport(ws) as unknown as EventEmitter;
  assert.ok(keepAckBytes(transport));
  assert.equal(keepAckBytes(transport), false, "wrapped once");
  const packets: EnginePacket[] = [];
  transport.on("packet", (p: EnginePacket) => packets.push(p));
  return { ws, packets };
}

const longBlob = "QUJD".repeat(MIN_ACK_BYTES / 4);

void test("the probe accepts the installed engine.io", () => {
  assert.equal(probeAckBytes(), null);
});

void test("only long text ACK messages pass on as bytes; the rest as engine.io decodes them", () => {
  const { ws, packets } = wrappedTransport();
  const ack = `43/smcp,5[{"blob":"${longBlob}"}]`;
  const cases: [Buffer, boolean, unknown][] = [
    [Buffer.from(ack), false, Buffer.from(ack.slice(1))],
    [Buffer.from("43/smcp,5[1]"), false, "3/smcp,5[1]"],
    [Buffer.from(`42/smcp,5["e","${longBlob}"]`), false, `2/smcp,5["e","${longBlob}"]`],
    [Buffer.from(`4${longBlob}`), false, longBlob],
    [Buffer.from([1, 2, 3]), true, Buffer.from([1, 2, 3])],
  ];
  for (const [data, isBinary] of cases) ws.emit("message", data, isBinary);
  assert.equal(packets.length, cases.length);
  cases.forEach(([, , expected], i) => {
    const packet = packets[i]!;
    assert.equal(packet.type, "message");
    assert.deepEqual(packet.data, expected, `case ${i}`);
    assert.equal(isAckMessage(packet.data), i === 0, `case ${i} kept as an ACK's bytes`);
  });
  // engine.io's other packet types are untouched.
  ws.emit("message", Buffer.from("2"), false);
  assert.deepEqual(packets.at(-1), { type: "ping" });
});

/** The packets an AckTextDecoder emits for an ACK message that passed as bytes. */
function decodeBytes(text: string, decoder = new AckTextDecoder()): Packet[] {
  const { ws, packets } = wrappedTransport();
  ws.emit("message", Buffer.from(`4${text}`), false);
  const out: Packet[] = [];
  decoder.on("decoded", (p: Packet) => out.push(p));
  for (const p of packets) decoder.add(p.data);
  return out;
}

void test("the decoder keeps a long ACK as its bytes, checked; the encoder writes them back", () => {
  // Raw UTF-8 (not escaped) in a short string: byte and character indexes differ after it.
  const json = `[{"name":"café ☕","blob":"${longBlob}","eof":true},null]`;
  const [packet] = decodeBytes(`3/smcp,5${json}`);
  assert.equal(packet?.type, PacketType.ACK);
  assert.equal(packet.nsp, "/smcp");
  assert.equal(packet.id, 5);
  const [args] = packet.data as AckText[];
  assert.ok(args instanceof AckText);
  assert.deepEqual(args.bytes, Buffer.from(json));
  assert.deepEqual(args.carried, { bytes: (longBlob.length / 4) * 3, carriage: "base64" });

  const out = { type: PacketType.ACK, nsp: "/smcp", id: 12, data: [args] };
  const [frameText] = new AckBytesEncoder().encode(out);
  assert.ok(frameText instanceof AckFrameText);
  assert.equal(frameText.body, args.bytes, "the very bytes, no copy");
  assert.equal(frameText.text(), `3/smcp,12${json}`);
  assert.deepEqual(new AckTextEncoder().encode(out), [`3/smcp,12${json}`]);
  assert.deepEqual(
    Buffer.concat(engineMessageFrame(frameText)),
    Buffer.concat(engineMessageFrame(frameText.text())),
    "the frame ws would have written for the text",
  );
});

void test("headers it does not read, and ACKs awaited attachments, take the standard path", () => {
  // A namespace with non-ASCII characters, or too long to look for: decoded as text, same packet.
  for (const nsp of ["/ñ", `/${"n".repeat(300)}`]) {
    const [packet] = decodeBytes(`3${nsp},7["${longBlob}"]`);
    assert.equal(packet?.nsp, nsp);
    assert.equal(packet.id, 7);
    assert.equal((packet.data as AckText[])[0]!.bytes, null, `${nsp.slice(0, 5)}: as text`);
  }
  const decoder = new AckTextDecoder();
  decoder.add('51-/smcp,["e",{"_placeholder":true,"num":0}]');
  assert.throws(
    () => decodeBytes(`3/smcp,2["${longBlob}"]`, decoder),
    /plaintext data when reconstructing/,
  );
});

void test("malformed long ACK bytes throw 'invalid payload' like the standard Decoder", () => {
  for (const json of [
    `[{"blob":"${longBlob}`,
    `[{"blob":"${longBlob}\u0001"}]`,
    `[{"blob":"${longBlob}"}]]`,
    `[{"a":},"${longBlob}"]`,
    `{"blob":"${longBlob}"}`,
  ]) {
    assert.throws(() => decodeBytes(`3/smcp,1${json}`), /invalid payload/, json.slice(0, 12));
  }
});

void test("the check on bytes says what the check on text says", () => {
  const alphabet = ["[", "]", "{", "}", '"', ":", ",", "\\", "a", "1", " ", "\u0001", "é", "☕"];
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 30 }).map((s) => `[${s}`),
    fc.jsonValue().map((v) => JSON.stringify([v, { body: "é".repeat(40) }])),
    fc.tuple(fc.jsonValue(), fc.nat(), fc.constantFrom(...alphabet)).map(([v, at, c]) => {
      const s = JSON.stringify([{ blob: "x".repeat(70), v }]);
      const i = at % s.length;
      return s.slice(0, i) + c + s.slice(i + 1);
    }),
  );
  fc.assert(
    fc.property(text, (s) => {
      const bytes = checkAckBytes(Buffer.from(s));
      const text = checkAckJson(s);
      assert.equal(bytes === null, text === null, s);
      // base64 is ASCII: of a `blob` that is not, one counts bytes and the other characters.
      if (text?.carriage !== "base64" || /^[\x20-\x7e]*$/.test(s)) assert.deepEqual(bytes, text, s);
    }),
    { numRuns: 2000 },
  );
});

void describe("end to end", { skip: skipUnlessFastPaths("ack bytes") }, () => {
  const pair = webSocketPairSuite();

  void test("a long ack with raw UTF-8 reaches the Agent byte for byte, never a string", async () => {
    const json = `[{"name":"café ☕","blob":"${longBlob}","req_id":"r"},null]`;
    answerNextRaw(pair.pc, json);
    const texts = incomingAckTexts(pair.agent);
    // What the Server's session of the Computer hands to socket.io.
    const received: unknown[] = [];
    const pcSession = pair.server.sessionOf<EventEmitter>(pair.pc);
    const onPacket = (p: EnginePacket): void =>
      void (p.type === "message" && received.push(p.data));
    pcSession.on("packet", onPacket);
    try {
      const args = await emitAck(
        pair.agent,
        "client:get_blob",
        request("agent-1", "pc-1", { blob_handle: "h" }),
      );
      assert.deepEqual(args, JSON.parse(json));
    } finally {
      pcSession.off("packet", onPacket);
    }
    assert.equal(received.length, 1);
    assert.ok(isAckMessage(received[0]), "socket.io got the message's bytes");
    assert.equal(texts.length, 1);
    assert.equal(texts[0]!.replace(/^3\/smcp,\d+/, ""), json);
  });
});
