// @pure
// The Server's raw-text parser (server/transport/raw-text.ts): a text ACK is kept as its JSON text
// and written back verbatim; a text put_blob event's payload is read from its skeleton and written
// back as the Agent's text; every other packet decodes and encodes exactly as socket.io-parser
// does; serialized by anyone else (an adapter carrying it to another node) each is the value it
// stands for; the probes accept the installed socket.io-parser.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Decoder, Encoder, PacketType, type Packet } from "socket.io-parser";
import {
  AckText,
  RawTextDecoder,
  RawTextEncoder,
  checkAckJson,
  probeRawAcks,
  probeRawUploads,
  rawTextParser,
  uploadText,
} from "../../server/transport/raw-text.ts";

/** Everything `decoder` emits for `messages`, or the error it threw. */
function decodeAll(decoder: Decoder, messages: unknown[]): Packet[] {
  const out: Packet[] = [];
  decoder.on("decoded", (p: Packet) => out.push(p));
  for (const m of messages) decoder.add(m);
  return out;
}

const standard = new Encoder();
const raw = new RawTextEncoder();

function rawDecode(text: string): Packet {
  const [packet] = decodeAll(new RawTextDecoder(), [text]);
  assert.ok(packet);
  return packet;
}

const chunk = {
  blob_handle: "h".repeat(98),
  mime_type: "application/octet-stream",
  total_size: 1 << 25,
  sha256: "ab".repeat(32),
  chunk_offset: 65536,
  eof: false,
  blob: Buffer.alloc(65536, 7).toString("base64"),
  req_id: "req-1",
};

void test("a chunk ack keeps its text and is written back verbatim under the Agent's id", () => {
  const [computerText] = standard.encode({
    type: PacketType.ACK,
    nsp: "/smcp",
    id: 7,
    data: [chunk],
  });
  const packet = rawDecode(computerText as string);
  assert.equal(packet.type, PacketType.ACK);
  assert.equal(packet.nsp, "/smcp");
  assert.equal(packet.id, 7);
  const [args] = packet.data as unknown[];
  assert.ok(args instanceof AckText);
  assert.equal(args.json, JSON.stringify([chunk]));
  assert.deepEqual(args.carried, {
    bytes: Buffer.byteLength(chunk.blob, "base64"),
    carriage: "base64",
  });
  const out = raw.encode({ type: PacketType.ACK, nsp: "/smcp", id: 12345, data: [args] });
  assert.deepEqual(out, [`3/smcp,12345${JSON.stringify([chunk])}`]);
  const [agentPacket] = decodeAll(new Decoder(), out);
  assert.deepEqual(agentPacket?.data, [chunk]);
});

void test("main namespace and several ack arguments", () => {
  const data = [{ a: 1 }, "two", null, [3]];
  const packet = rawDecode(`30${JSON.stringify(data)}`);
  assert.equal(packet.nsp, "/");
  assert.equal(packet.id, 0);
  const out = raw.encode({ type: PacketType.ACK, nsp: "/", id: 9, data: packet.data });
  assert.deepEqual(out, [`39${JSON.stringify(data)}`]);
});

void test("carried bytes: blob (decoded from its length and padding), else body (UTF-8), else nothing", () => {
  const bytes = (v: unknown): unknown => checkAckJson(JSON.stringify(v));
  const none = { bytes: 0, carriage: null };
  for (const n of [0, 1, 2, 3, 4, 100, 101, 102]) {
    const blob = Buffer.alloc(n, 7).toString("base64");
    assert.deepEqual(bytes([{ blob }]), { bytes: n, carriage: "base64" }, `${n} bytes`);
    assert.deepEqual(
      bytes([{ blob: blob.replace(/=+$/, "") }]),
      { bytes: n, carriage: "base64" },
      `${n} bytes, unpadded`,
    );
  }
  assert.deepEqual(bytes([{ body: "x".repeat(300) }]), { bytes: 300, carriage: "inline" });
  assert.deepEqual(bytes([{ body: "short" }]), { bytes: 5, carriage: "inline" });
  assert.deepEqual(bytes([{ body: "é".repeat(100) }]), { bytes: 200, carriage: "inline" });
  assert.deepEqual(bytes([{ other: "y".repeat(300) }]), none);
  assert.deepEqual(bytes([{ code: 404, message: 'no "pc"' }]), none);
  assert.deepEqual(bytes([{ body: 'line\n"q"' }]), { bytes: 8, carriage: "inline" });
  assert.deepEqual(bytes(["z".repeat(100), { blob: "b".repeat(100) }]), none);
  assert.deepEqual(checkAckJson("[]"), none);
});

void test("binary acks, events and acks without data decode and encode as the standard parser", () => {
  const binary: Packet = {
    type: PacketType.ACK,
    nsp: "/smcp",
    id: 3,
    data: [{ ...chunk, blob: Buffer.from([1, 2, 3]), blob_format: "binary" }],
  };
  const texts = [
    standard.encode(binary),
    standard.encode({ type: PacketType.EVENT, nsp: "/smcp", id: 4, data: ["client:get_blob", {}] }),
    standard.encode({ type: PacketType.CONNECT, nsp: "/smcp", data: { token: "t" } }),
    standard.encode({ type: PacketType.DISCONNECT, nsp: "/smcp" }),
    ["3/smcp,5"],
    ["3/smcp,[1]"],
    [`3/smcp,${"9".repeat(20)}[1]`],
  ];
  for (const messages of texts) {
    assert.deepEqual(
      decodeAll(new RawTextDecoder(), messages),
      decodeAll(new Decoder(), messages),
      String(messages[0]),
    );
  }
  const [decoded] = decodeAll(new RawTextDecoder(), standard.encode(binary));
  assert.ok(decoded);
  assert.deepEqual(raw.encode(decoded), standard.encode(decoded));
  const event: Packet = { type: PacketType.EVENT, nsp: "/smcp", data: ["x", { y: 1 }] };
  assert.deepEqual(raw.encode(event), standard.encode(event));
});

void test("malformed ACK text throws 'invalid payload' like the standard Decoder", () => {
  const bad = [
    '3/smcp,5[{"a":}]',
    '3/smcp,5["abc',
    "3/smcp,5[1]x",
    "3/smcp,5[1,]",
    '3/smcp,5["a\u0001b"]',
    '3/smcp,5["\\x"]',
    "3/smcp,5{}",
  ];
  for (const text of bad) {
    assert.throws(() => decodeAll(new RawTextDecoder(), [text]), /invalid payload/, text);
    assert.throws(() => decodeAll(new Decoder(), [text]), /invalid payload/, text);
  }
});

void test("valid but unusual JSON (escapes, spaces) is accepted and kept byte for byte", () => {
  for (const json of [
    '[{"m":"a\\"b\\\\c\\n\\u00e9"}]',
    "[ 1 , 2.50 ]",
    '[{"__proto__":{"x":1}}]',
  ]) {
    const [args] = rawDecode(`3/smcp,1${json}`).data as AckText[];
    assert.equal(args?.json, json);
    assert.deepEqual(args?.args(), JSON.parse(json));
  }
});

void test("a text ACK while binary attachments are awaited is refused as by socket.io-parser", () => {
  const [header] = standard.encode({
    type: PacketType.ACK,
    nsp: "/smcp",
    id: 1,
    data: [Buffer.from([1])],
  });
  const decoder = new RawTextDecoder();
  decoder.add(header);
  assert.throws(() => decoder.add("3/smcp,2[1]"), /plaintext data when reconstructing/);
});

void test("the check accepts exactly the texts JSON.parse reads as an array", () => {
  const alphabet = [
    "[",
    "]",
    "{",
    "}",
    '"',
    ":",
    ",",
    "\\",
    "a",
    "1",
    " ",
    "\u0001",
    "n",
    "u",
    "e",
  ];
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 30 }).map((s) => `[${s}`),
    fc.jsonValue().map((v) => JSON.stringify([v])),
    fc.tuple(fc.jsonValue(), fc.nat(), fc.constantFrom(...alphabet)).map(([v, at, c]) => {
      const s = JSON.stringify([v, "x".repeat(70)]);
      const i = at % s.length;
      return s.slice(0, i) + c + s.slice(i + 1);
    }),
  );
  fc.assert(
    fc.property(text, (s) => {
      let expected: boolean;
      try {
        expected = Array.isArray(JSON.parse(s));
      } catch {
        expected = false;
      }
      assert.equal(checkAckJson(s) !== null, expected, s);
    }),
    { numRuns: 5000 },
  );
});

void test("serialized as JSON, an ack text is the first argument it stands for", () => {
  const [text] = standard.encode({ type: PacketType.ACK, nsp: "/smcp", id: 7, data: [chunk, 2] });
  const [args] = rawDecode(text as string).data as AckText[];
  assert.ok(args instanceof AckText);
  // As the Redis adapter carries one ack argument to another node (its msgpack calls toJSON too:
  // test/scaleout/two-nodes.test.ts relays real answers across nodes).
  assert.deepEqual(JSON.parse(JSON.stringify({ packet: args })), { packet: chunk });
});

void test("the probe accepts the installed socket.io-parser", () => {
  assert.equal(probeRawAcks(), null);
});

// ---- put_blob events ------------------------------------------------------------------------

const upload = {
  agent: "agent-1",
  req_id: "req-9",
  computer: "pc-1",
  upload_id: "ab".repeat(16),
  chunk_offset: 65536,
  eof: false,
  blob: Buffer.alloc(49152, 9).toString("base64"),
};

const putText = (payload: unknown, id = 4): string =>
  standard.encode({
    type: PacketType.EVENT,
    nsp: "/smcp",
    id,
    data: ["client:put_blob", payload],
  })[0] as string;

void test("a put_blob chunk is read from its text and written back to the Computer verbatim", () => {
  const text = putText(upload);
  const packet = rawDecode(text);
  assert.deepEqual(packet, decodeAll(new Decoder(), [text])[0]);
  const [, payload] = packet.data as [string, unknown];
  assert.equal(uploadText(payload), JSON.stringify(upload));
  const out = raw.encode({
    type: PacketType.EVENT,
    nsp: "/smcp",
    id: 77,
    data: ["client:put_blob", payload],
  });
  assert.deepEqual(out, [`2/smcp,77["client:put_blob",${JSON.stringify(upload)}]`]);
  // Text a JSON.parse + JSON.stringify round trip rewrites is kept as the Agent wrote it.
  const unusual = `{"agent":"a", "chunk_offset":2.50,"eof":false,"blob":"${upload.blob}"}`;
  const kept = rawDecode(`2/smcp,5["client:put_blob",${unusual}]`);
  const written = raw.encode({ ...kept, id: 6 });
  assert.deepEqual(written, [`2/smcp,6["client:put_blob",${unusual}]`]);
});

void test("put_blob text its skeleton cannot stand for decodes as the standard parser's", () => {
  const long = "x".repeat(100);
  const texts = [
    putText({ ...upload, name_hint: 'caf\\u00e9 "q"' }),
    putText({ ...upload, [long]: 1 }),
    putText({ ...upload, nested: { blob: long } }),
    standard.encode({
      type: PacketType.EVENT,
      nsp: "/smcp",
      id: 4,
      data: ["client:put_blob", upload, long],
    })[0] as string,
    `2/smcp,4["client:put_blob",{"__proto__":"${long}","blob":"${long}"}]`,
    `2/smcp,4[ "client:put_blob",${JSON.stringify(upload)}]`,
    `2/smcp,4["client:put_blob",["${long}"]]`,
    `2/smcp,4["client:put_blob","${long}"]`,
    putText({ ...upload, blob: "a\nb".repeat(40) }),
  ];
  for (const text of texts) {
    const [packet] = decodeAll(new RawTextDecoder(), [text]);
    assert.deepEqual(packet, decodeAll(new Decoder(), [text])[0], text.slice(0, 80));
    assert.equal(
      uploadText((packet?.data as unknown[])[1]),
      undefined,
      `case ${texts.indexOf(text)}`,
    );
  }
  // Without an ack id and on the main namespace the payload is still read from its text.
  const [plain] = decodeAll(new RawTextDecoder(), [
    `2["client:put_blob",${JSON.stringify(upload)}]`,
  ]);
  assert.equal(plain?.id, undefined);
  assert.equal(uploadText((plain?.data as unknown[])[1]), JSON.stringify(upload));
});

void test("malformed put_blob text throws 'invalid payload' like the standard Decoder", () => {
  const long = "y".repeat(100);
  for (const text of [
    `2/smcp,4["client:put_blob",{"blob":}]`,
    `2/smcp,4["client:put_blob",{"blob":"${long}]`,
    `2/smcp,4["client:put_blob",{"blob":"${long}",}]`,
    `2/smcp,4["client:put_blob",{"blob":"${long}"}]]`,
  ]) {
    assert.throws(() => decodeAll(new RawTextDecoder(), [text]), /invalid payload/, text);
    assert.throws(() => decodeAll(new Decoder(), [text]), /invalid payload/, text);
  }
});

void test("any put_blob payload decodes, and encodes back, to what the standard parser makes", () => {
  const longText = fc.string({ minLength: 65, maxLength: 200 });
  const payload = fc.dictionary(
    fc.string({ maxLength: 8 }),
    fc.oneof(fc.jsonValue({ maxDepth: 2 }), longText),
    { maxKeys: 6 },
  );
  fc.assert(
    fc.property(payload, fc.nat(1000), (p, id) => {
      const text = putText(p, id);
      const [mine] = decodeAll(new RawTextDecoder(), [text]);
      assert.deepEqual(mine, decodeAll(new Decoder(), [text])[0]);
      assert.ok(mine);
      const written = raw.encode({ ...mine, id: id + 1 });
      assert.deepEqual(written, standard.encode({ ...mine, id: id + 1 }));
    }),
    { numRuns: 2000 },
  );
});

void test("with raw uploads off the Decoder keeps no put_blob text, with raw acks off no ack text", () => {
  const { Decoder: acksOnly } = rawTextParser({ acks: true, uploads: false });
  const [event] = decodeAll(new acksOnly(), [putText(upload)]);
  assert.equal(uploadText((event?.data as unknown[])[1]), undefined);
  const { Decoder: uploadsOnly } = rawTextParser({ acks: false, uploads: true });
  const ackText = `3/smcp,7${JSON.stringify([chunk])}`;
  const [ack] = decodeAll(new uploadsOnly(), [ackText, putText(upload)]).slice(0, 1);
  assert.ok(!((ack?.data as unknown[])[0] instanceof AckText));
  const [, kept] = decodeAll(new uploadsOnly(), [ackText, putText(upload)]);
  assert.equal(uploadText((kept?.data as unknown[])[1]), JSON.stringify(upload));
});

void test("serialized as JSON (another node's adapter), a put_blob payload is its value", () => {
  const [, payload] = rawDecode(putText(upload)).data as [string, unknown];
  assert.deepEqual(JSON.parse(JSON.stringify({ payload })), { payload: upload });
});

void test("the upload probe accepts the installed socket.io and socket.io-parser", () => {
  assert.equal(probeRawUploads(), null);
});
