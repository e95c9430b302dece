// Every transport fast path the Server reports `on` is applied, and every one it reports `off` is
// not: checked by its effect on a real Server, once with the defaults (every fast path the
// installed libraries support) and once stock (`fastPaths: "none"`).
// - raw_acks: the Agent receives the Computer's ack text byte for byte, through our parser;
// - ack_bytes: a long ack reaches socket.io as the bytes of the Computer's message;
// - preframe: a long answer to a WebSocket Agent is queued in engine.io as a ready frame;
// - batch_writes: a binary answer leaves the Server in one write;
// - fair_reads: a flood arriving in one TCP read is handled one message per event-loop turn.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { Socket as NetSocket } from "node:net";
import { after, before, describe, test } from "node:test";
import { NAMESPACE } from "../../protocol/index.ts";
import type { FastPathOptions } from "../../server/index.ts";
import { AckTextEncoder } from "../../server/transport/raw-acks.ts";
import { RawClient } from "../support/raw-client.ts";
import {
  ServerHarness,
  TEST_TOKEN,
  answerNextRaw,
  emitAck,
  incomingAckTexts,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";
import { countTcpWrites } from "../support/tcp-writes.ts";

type WirePacket = { type: string; data?: unknown };
type EnginePacket = { type: string; data?: unknown; options?: { wsPreEncodedFrame?: unknown } };
interface EngineSession {
  transport: { name: string; socket: { _socket: unknown } };
  on(event: "packetCreate" | "packet", fn: (p: EnginePacket) => void): void;
  off(event: "packetCreate" | "packet", fn: (p: EnginePacket) => void): void;
}

for (const fastPaths of ["all", "none"] satisfies FastPathOptions[]) {
  void describe(`fastPaths: ${fastPaths}`, () => {
    let h: ServerHarness;
    let agent: Socket;
    let pc: Socket;
    before(async () => {
      h = await ServerHarness.start({ fastPaths });
      ({ agent, pc } = await h.webSocketPair());
    });
    after(() => h.close());

    const on = (path: keyof ServerHarness["server"]["transport"]): boolean => {
      const state = h.server.transport[path];
      if (fastPaths === "none") assert.equal(state, "off");
      return state === "on";
    };
    const session = (): EngineSession => h.sessionOf<EngineSession>(agent);

    void test("raw_acks: the ack text reaches the Agent byte for byte exactly when on", async () => {
      const applied = on("raw_acks");
      assert.equal(h.server.io.encoder instanceof AckTextEncoder, applied, "the parser in use");
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

    void test("ack_bytes: a long ack reaches socket.io as bytes exactly when on", async () => {
      const applied = on("ack_bytes");
      const blob = randomBytes(64 * 1024).toString("base64");
      pc.once("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
        ack(wholeChunkAck(blob, req.req_id)),
      );
      const received: unknown[] = [];
      const onPacket = (p: WirePacket): void =>
        void (p.type === "message" && received.push(p.data));
      const pcSession = h.sessionOf<EngineSession>(pc);
      pcSession.on("packet", onPacket);
      try {
        const [answer] = await emitAck(
          agent,
          "client:get_blob",
          request("agent-1", "pc-1", { blob_handle: "h" }),
        );
        assert.equal((answer as { blob: string }).blob, blob);
      } finally {
        pcSession.off("packet", onPacket);
      }
      assert.equal(received.length, 1);
      assert.equal(Buffer.isBuffer(received[0]), applied);
      assert.equal(typeof received[0] === "string", !applied);
    });

    void test("preframe: a long answer is queued as a ready frame exactly when on", async () => {
      const applied = on("preframe");
      pc.once("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
        ack(wholeChunkAck(randomBytes(64 * 1024).toString("base64"), req.req_id)),
      );
      const created: EnginePacket[] = [];
      const onPacket = (p: EnginePacket): void => void (p.type === "message" && created.push(p));
      session().on("packetCreate", onPacket);
      try {
        await emitAck(agent, "client:get_blob", request("agent-1", "pc-1", { blob_handle: "h" }));
      } finally {
        session().off("packetCreate", onPacket);
      }
      assert.equal(created.length, 1);
      assert.equal(created[0]!.options?.wsPreEncodedFrame !== undefined, applied);
      assert.equal(typeof created[0]!.data === "string", !applied);
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

    void test("fair_reads: a flood in one read is handled one per turn exactly when on", async () => {
      const applied = on("fair_reads");
      const nsp = h.server.io.of(NAMESPACE);
      const known = new Set(nsp.sockets.keys());
      const flooder = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
      try {
        const serverSide = [...nsp.sockets.values()].find((s) => !known.has(s.id));
        assert.ok(serverSide, "the Server's socket of the flooding client");
        const n = 100;
        const seen: number[] = [];
        let turns = 0;
        let inTurn = false;
        serverSide.on("test:flood", (i: number) => {
          seen.push(i);
          if (inTurn) return;
          inTurn = true;
          turns++;
          process.nextTick(() => (inTurn = false));
        });
        // Every frame in one TCP write: the Server reads the whole flood at once.
        const tcp = flooder.tcp as NetSocket;
        tcp.cork();
        for (let i = 0; i < n; i++) flooder.notify("test:flood", i);
        tcp.uncork();
        await flooder.request("server:list_room", null);
        assert.deepEqual(
          seen,
          Array.from({ length: n }, (_, i) => i),
        );
        if (applied) assert.equal(turns, n, `${n} messages in ${turns} stretches`);
        else assert.ok(turns < n / 2, `${n} messages in ${turns} stretches`);
      } finally {
        flooder.close();
      }
    });
  });
}
