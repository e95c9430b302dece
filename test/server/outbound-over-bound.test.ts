// @both-transports
// A connection that stays over its bound is dropped even while it reads (server/outbound.ts):
// one answer larger than `maxQueuedBytes` is still admitted (nothing was held), but a client
// that takes it only trickle by trickle stays over the bound; after `outboundStallMs` of that it
// is dropped as outbound_over_bound, not as stalled. The sweep is run here with the clock the
// test gives it, so no real 60 s pass.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { NAMESPACE } from "../../protocol/index.ts";
import {
  ServerHarness,
  clientTcp,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

const STALL_MS = 60_000;
const BOUND = 1024 * 1024;
let h: ServerHarness;
let agent: Socket;
before(async () => {
  h = await ServerHarness.start({
    maxHttpBufferSize: 20_000_000,
    maxQueuedBytes: BOUND,
    outboundStallMs: STALL_MS,
  });
  ({ agent } = await h.webSocketPair());
  const pc = await h.computer("office-1", "pc-big", { transports: ["websocket"] });
  pc.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) =>
    ack(wholeChunkAck("A".repeat(16_000_000), req.req_id)),
  );
});
after(() => h.close());

void test("over its bound for the stall time while reading a trickle: outbound_over_bound", async () => {
  const meter = h.server.outbound.accountOf(h.sessionOf(agent))?.meter;
  assert.ok(meter);
  const tcp = clientTcp(agent);
  tcp.pause();
  const serverSide = h.server.io.of(NAMESPACE).sockets.get(agent.id ?? "");
  const gone = new Promise((resolve) => serverSide!.once("disconnect", resolve));
  agent.emit("client:get_blob", request("agent-1", "pc-big", { blob_handle: "h" }), () => {});
  while (meter.queued < 8 * BOUND) await new Promise((r) => setImmediate(r));

  const t0 = performance.now();
  h.server.outbound.sweep(t0); // over the bound from now on
  // The client reads a little (1 MiB: enough for TCP to reopen its window), and stops again;
  // the bytes the Server's kernel then takes are the move the sweep sees.
  const before = meter.progress();
  await new Promise<void>((resolve) => {
    let read = 0;
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read < BOUND) return;
      tcp.pause();
      tcp.off("data", onData);
      resolve();
    };
    tcp.on("data", onData);
    tcp.resume();
  });
  while (meter.progress() === before) await new Promise((r) => setTimeout(r, 10));
  assert.ok(meter.queued > BOUND, "still over the bound");
  h.server.outbound.sweep(t0 + STALL_MS + 1);
  await gone;
  const text = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(text, /a2c_disconnects_total\{reason="outbound_over_bound"\} 1\b/);
  assert.doesNotMatch(text, /reason="outbound_stalled"/);
});
