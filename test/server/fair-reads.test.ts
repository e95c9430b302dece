// server/fair-reads.ts: the Server handles at most MAX_MESSAGES_PER_STRETCH messages of a
// connection in one synchronous stretch, so a client's flood cannot hold the event loop; every
// message of the flood is still handled, in order.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { MAX_MESSAGES_PER_STRETCH } from "../../server/fair-reads.ts";
import { ServerHarness, barrier, type Socket } from "../support/server-harness.ts";

let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start();
  ({ agent } = await h.webSocketPair());
});
after(() => h.close());

void test("a flood of 300 messages is handled a few at a time, all of them, in order", async () => {
  const n = 300;
  const serverSide = h.server.io.of("/smcp").sockets.get(agent.id ?? "");
  assert.ok(serverSide, "the Server's socket of the Agent");
  const seen: number[] = [];
  // A stretch of synchronous work lasts until the stack unwinds (the next tick).
  const stretches: number[] = [];
  let inStretch = false;
  serverSide.on("test:flood", (i: number) => {
    seen.push(i);
    if (inStretch) {
      stretches[stretches.length - 1]!++;
      return;
    }
    inStretch = true;
    stretches.push(1);
    process.nextTick(() => (inStretch = false));
  });
  // Emitted synchronously: the frames leave in a few writes and arrive in a few reads.
  for (let i = 0; i < n; i++) agent.emit("test:flood", i);
  await barrier(agent);
  assert.deepEqual(
    seen,
    Array.from({ length: n }, (_, i) => i),
  );
  // The message ws defers is emitted first thing in its own turn, then up to the limit more.
  const longest = Math.max(...stretches);
  assert.ok(
    longest <= MAX_MESSAGES_PER_STRETCH + 1,
    `${n} messages in stretches of ${stretches.join(",")}`,
  );
});
