// server/transport/fair-reads.ts: the Server handles at most one message of a connection per event-loop
// turn, so a client's flood cannot run as one long synchronous stretch; every message of the
// flood is still handled, in order.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NAMESPACE } from "../../protocol/index.ts";
import {
  ServerHarness,
  barrier,
  skipUnlessFastPaths,
  type Socket,
} from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start();
  ({ agent } = await h.webSocketPair());
});
after(() => h.close());

const skip = skipUnlessFastPaths("fair reads");

void test(
  "a flood of 300 messages is handled one per turn, all of them, in order",
  { skip },
  async () => {
    const n = 300;
    const serverSide = h.server.io.of(NAMESPACE).sockets.get(agent.id ?? "");
    assert.ok(serverSide, "the Server's socket of the Agent");
    const seen: number[] = [];
    // A turn is a stretch of synchronous work: `inTurn` stays set until the stack unwinds.
    let turns = 0;
    let inTurn = false;
    serverSide.on("test:flood", (i: number) => {
      seen.push(i);
      if (inTurn) return;
      inTurn = true;
      turns++;
      process.nextTick(() => (inTurn = false));
    });
    // Emitted synchronously: the frames leave in a few writes and arrive in a few reads.
    for (let i = 0; i < n; i++) agent.emit("test:flood", i);
    await barrier(agent);
    assert.deepEqual(
      seen,
      Array.from({ length: n }, (_, i) => i),
    );
    assert.equal(turns, n, `${n} messages handled in ${turns} synchronous stretches`);
  },
);
