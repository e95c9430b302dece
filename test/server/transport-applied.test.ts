// Every transport fast path the Server reports `on` is applied, and every one it reports `off` is
// not: checked by its effect on a real Server, once with the defaults (every fast path the
// installed libraries support) and once stock (`transport: "stock"`).
// - raw_acks: the Agent receives the Computer's ack text byte for byte, through our parser;
// - raw_uploads: the Computer receives the Agent's put_blob text byte for byte;
// - batch_writes: a binary answer leaves the Server in one write.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { TransportOption } from "../../server/index.ts";
import { RawTextEncoder } from "../../server/transport/raw-text.ts";
import {
  ServerHarness,
  answerNextRaw,
  emitAck,
  incomingAckTexts,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";
import { countTcpWrites } from "../support/tcp-writes.ts";

interface EngineSession {
  transport: { name: string; socket: { _socket: unknown } };
}

for (const transport of ["fast", "stock"] satisfies TransportOption[]) {
  void describe(`transport: ${transport}`, () => {
    let h: ServerHarness;
    let agent: Socket;
    let pc: Socket;
    before(async () => {
      h = await ServerHarness.start({ transport });
      ({ agent, pc } = await h.webSocketPair());
    });
    after(() => h.close());

    const on = (path: keyof ServerHarness["server"]["fastPaths"]): boolean => {
      const state = h.server.fastPaths[path];
      if (transport === "stock") assert.equal(state, "off");
      return state === "on";
    };
    const session = (): EngineSession => h.sessionOf<EngineSession>(agent);

    void test("raw_acks: the ack text reaches the Agent byte for byte exactly when on", async () => {
      const applied = on("raw_acks");
      assert.equal(h.server.io.encoder instanceof RawTextEncoder, applied, "the parser in use");
      // Text a JSON.parse + JSON.stringify round trip rewrites (`2.50`, the space, `\u00e9`).
      const json = `[{"score":2.50, "name":"caf\\u00e9","blob":"QUJD","req_id":"r"}]`;
      answerNextRaw(pc, json);
      const texts = incomingAckTexts(agent);
      const args = await emitAck(
        agent,
        "client:get_blob",
        request("agent-1", "pc-1", { blob_handle: "h" }),
      );
      assert.deepEqual(args, JSON.parse(json));
      assert.equal(texts.length, 1);
      assert.equal(texts[0]!.replace(/^3\/smcp,\d+/, "") === json, applied, texts[0]);
    });

    void test("raw_uploads: the put_blob text reaches the Computer byte for byte exactly when on", async () => {
      const applied = on("raw_uploads");
      // Text a JSON.parse + JSON.stringify round trip rewrites (`2.50`, the spaces).
      const blob = Buffer.alloc(3000, 5).toString("base64");
      const json = `{"agent":"agent-1", "req_id":"r-up","computer":"pc-1","chunk_offset":0,"eof":true,"total_size":2.50e3,"sha256":"${"ab".repeat(32)}","blob":"${blob}"}`;
      const seen = new Promise<string>((resolve) => {
        const onPacket = (p: { type: string; data?: unknown }): void => {
          if (typeof p.data !== "string" || !p.data.startsWith("2/smcp,")) return;
          pc.io.engine.off("packet", onPacket);
          resolve(p.data);
        };
        pc.io.engine.on("packet", onPacket);
      });
      const answered = new Promise<unknown>((resolve) =>
        pc.once("client:put_blob", (req: unknown, ack: (a: unknown) => void) => {
          ack({ code: 4019, message: "test", details: { reason: "forbidden" } });
          resolve(req);
        }),
      );
      const acked = new Promise<string>((resolve) => {
        const onPacket = (p: { data?: unknown }): void => {
          if (typeof p.data !== "string" || !p.data.startsWith("3/smcp,987654")) return;
          agent.io.engine.off("packet", onPacket);
          resolve(p.data);
        };
        agent.io.engine.on("packet", onPacket);
      });
      agent.io.engine.send(`2/smcp,987654["client:put_blob",${json}]`);
      const text = await seen;
      assert.deepEqual(await answered, JSON.parse(json));
      assert.match(await acked, /"code":4019/);
      const forwarded = text.replace(/^2\/smcp,\d+\["client:put_blob",/, "").slice(0, -1);
      assert.equal(forwarded === json, applied, text.slice(0, 120));
    });

    void test("batch_writes: a binary answer leaves in one write exactly when on", async () => {
      const applied = on("batch_writes");
      const bytes = randomBytes(16 * 1024);
      pc.once("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
        ack(wholeChunkAck(bytes, req.req_id, { blob_format: "binary" })),
      );
      const seen = countTcpWrites(session().transport.socket._socket);
      const [answer] = await emitAck(
        agent,
        "client:get_blob",
        request("agent-1", "pc-1", { blob_handle: "h", blob_format: "binary" }),
      );
      assert.ok(Buffer.isBuffer((answer as { blob: unknown }).blob));
      assert.equal(seen.writes, applied ? 1 : 2);
    });
  });
}
