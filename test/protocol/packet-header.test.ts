// @pure
/**
 * `readPacketHeader` (protocol/sizing.ts) reads a socket.io packet's type, namespace and ack id as
 * socket.io-parser's Encoder wrote them, for every packet type, with and without a namespace and
 * an id, and `writePacketHeader` writes a text packet's header as it does; the Server's raw text,
 * the Agent's upload text and the session guard read and write headers only through them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Encoder, type Packet } from "socket.io-parser";
import { readPacketHeader, writePacketHeader } from "../../protocol/index.ts";

void test("readPacketHeader reads what socket.io-parser's Encoder writes", () => {
  const encoder = new Encoder();
  let checked = 0;
  for (const type of [0, 1, 2, 3, 4, 5, 6]) {
    for (const nsp of ["/", "/smcp"]) {
      for (const id of [undefined, 0, 7, 123456]) {
        const binary = type === 5 || type === 6;
        const data = binary
          ? ["e", Buffer.from("x")]
          : type === 0 || type === 1
            ? undefined
            : ["e", { a: 1 }];
        const packet: Packet = {
          type: type,
          nsp,
          ...(id === undefined ? {} : { id }),
          data,
        };
        const text = encoder.encode(packet)[0] as string;
        const h = readPacketHeader(text);
        assert.deepEqual(h && { type: h.type, nsp: h.nsp, id: h.id }, { type, nsp, id }, text);
        checked++;
      }
    }
  }
  assert.equal(checked, 56);
  assert.equal(readPacketHeader("x"), null);
  assert.equal(readPacketHeader(""), null);
  // A run of digits longer than a counter's is left unread, as the raw-ack shortcut wants.
  assert.equal(readPacketHeader("3/smcp,1234567890123456[1]")?.id, undefined);
  assert.equal(readPacketHeader("3/smcp")?.start, 6);
});

void test("writePacketHeader writes a text packet's header as socket.io-parser's Encoder does", () => {
  const encoder = new Encoder();
  for (const type of [2, 3]) {
    for (const nsp of ["/", "/smcp"]) {
      for (const id of [undefined, 0, 7, 123456]) {
        const text = encoder.encode({
          type,
          nsp,
          ...(id === undefined ? {} : { id }),
          data: [1],
        })[0];
        assert.equal(`${writePacketHeader(type, nsp, id)}[1]`, text, `${type} ${nsp} ${id}`);
      }
    }
  }
});
