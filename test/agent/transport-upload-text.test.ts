/**
 * The Agent's transport (agent/transport.ts): a base64 put_blob chunk of the SDK's own uploads is
 * written around its base64, byte for byte what socket.io-parser writes; anything else is
 * socket.io-parser's; the probe accepts the installed parser; the client applies the fast path
 * exactly when it reports it `on` (`transport: "stock"` turns it off), seen by whether the
 * chunk's base64 ever goes through JSON.stringify.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import { Encoder, PacketType, type Packet } from "socket.io-parser";
import { AgentClient } from "../../agent/client.ts";
import {
  UploadTextEncoder,
  decideFastPaths,
  probeUploadText,
  markBase64Payload,
} from "../../agent/transport.ts";
import { putPayload } from "../../agent/upload-wire.ts";
import { COMPUTER, OFFICE, useFakeServer } from "../support/agent-fake-computer.ts";

const stock = new Encoder();
const ours = new UploadTextEncoder();

const put = (payload: object, id?: number): Packet => ({
  type: PacketType.EVENT,
  nsp: "/smcp",
  ...(id !== undefined ? { id } : {}),
  data: ["client:put_blob", payload],
});

void test("an SDK base64 chunk is written byte for byte as socket.io-parser writes it", () => {
  const text = fc.string({ unit: "binary", maxLength: 12 });
  fc.assert(
    fc.property(
      fc.record({ agent: text, req_id: text, computer: text, name_hint: text }),
      fc.uint8Array({ maxLength: 300 }),
      fc.option(fc.nat(1 << 20), { nil: undefined }),
      fc.boolean(),
      (fields, bytes, id, first) => {
        const payload = putPayload(fields.agent, fields.req_id, fields.computer, {
          offset: 3,
          eof: bytes.length % 2 === 0,
          blob: Buffer.from(bytes),
          asBase64: true,
          ...(first
            ? { declaration: { totalSize: 9, sha256: "ab".repeat(32), nameHint: fields.name_hint } }
            : { uploadId: "cd".repeat(16) }),
          blobFormat: "base64",
        });
        assert.equal(payload.blob, Buffer.from(bytes).toString("base64"));
        assert.deepEqual(ours.encode(put(payload, id)), stock.encode(put(payload, id)));
      },
    ),
    { numRuns: 3000 },
  );
});

void test("anything else goes through socket.io-parser", () => {
  // A caller's own string (not the SDK's base64) may need escapes: not marked, not touched.
  const own = { agent: "a", blob: 'lone \ud800 and \u0001 and "q"' };
  assert.deepEqual(ours.encode(put(own, 1)), stock.encode(put(own, 1)));
  // Marked, but a Buffer blob: a binary attachment as the stock Encoder splits it.
  const binary = { agent: "a", blob: Buffer.from([1, 2, 3]) };
  markBase64Payload(binary);
  assert.deepEqual(ours.encode(put(binary, 2)), stock.encode(put(binary, 2)));
  const other: Packet = {
    type: PacketType.EVENT,
    nsp: "/smcp",
    id: 3,
    data: ["client:get_blob", {}],
  };
  assert.deepEqual(ours.encode(other), stock.encode(other));
});

void test("the probe accepts the installed socket.io-parser; stock turns the fast path off", () => {
  assert.equal(probeUploadText(), null);
  assert.deepEqual(decideFastPaths(), { upload_text: "on" });
  assert.deepEqual(decideFastPaths("stock"), { upload_text: "off" });
});

let url = "";
useFakeServer((fake) => {
  url = fake.url;
  fake.on("client:put_blob", (req) => ({
    upload_id: "ab".repeat(16),
    chunk_offset: req.chunk_offset,
  }));
});

/** The longest text JSON.stringify returns while `run` sends one chunk. */
async function longestStringify(run: () => Promise<unknown>): Promise<number> {
  const original = JSON.stringify;
  let longest = 0;
  JSON.stringify = function (this: unknown, ...args: Parameters<typeof original>) {
    const out = original.apply(this, args) as string | undefined;
    longest = Math.max(longest, out?.length ?? 0);
    return out;
  } as typeof original;
  try {
    await run();
  } finally {
    JSON.stringify = original;
  }
  return longest;
}

for (const transport of ["fast", "stock"] as const) {
  void test(`transport ${transport}: a base64 chunk's text is built around its base64 exactly when on`, async () => {
    const agent = new AgentClient({ url, name: "agent-1", transport });
    try {
      await agent.connect();
      await agent.joinOffice(OFFICE);
      const on = agent.fastPaths.upload_text === "on";
      assert.equal(on, transport === "fast");
      const bytes = randomBytes(48 * 1024);
      const longest = await longestStringify(() =>
        agent.putBlobChunk(COMPUTER, { offset: 0, eof: false, blob: bytes, asBase64: true }),
      );
      const b64 = Math.ceil(bytes.length / 3) * 4;
      assert.equal(longest >= b64, !on, `longest JSON.stringify ${longest} chars`);
    } finally {
      await agent.close();
    }
  });
}
