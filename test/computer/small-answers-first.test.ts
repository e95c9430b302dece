/**
 * A small answer overtakes queued chunk answers (computer/chunk-scheduler.ts, D47–D48): real Server on
 * port 0, real Computer, a plain socket.io Agent. The Server stops reading the Computer's
 * connection (its TCP socket paused, as a congested uplink would), the Agent asks for 32 binary
 * chunks of 512 KiB (16 MiB, more than the kernel buffers of a loopback connection hold) and then
 * for `client:get_tools`. When the Server reads again, the tools answer arrives before most chunk
 * answers: the Computer read chunks only while its socket held less than `maxUnsentBytes`, and
 * handed the small answer over at once. With the bound lifted, the same run delivers the tools
 * answer after every chunk the Computer had read before it (first in, first out), which is what
 * the bound is for.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import type { ComputerService } from "../../computer/contracts.ts";
import { Events } from "../../protocol/index.ts";
import { request, ServerHarness, type Socket } from "../support/server-harness.ts";
import { producersOnly, startHarnessComputer, upgraded } from "./support/harness-computer.ts";
import { TestProducer } from "./support/test-producer.ts";

const CHUNK = 512 * 1024;
const CHUNKS = 32;
const dir = mkdtempSync(join(tmpdir(), "a2c-small-first-"));
const file = join(dir, "big.bin");
let h: ServerHarness;
let agent: Socket;

before(async () => {
  writeFileSync(file, Buffer.alloc(CHUNKS * CHUNK, 7));
  // No unread bound: this Agent reads everything; the test is about the Computer's uplink.
  h = await ServerHarness.start({ maxUnreadBytes: 0 });
  agent = await h.agent("office-1", "agent-1");
});

after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The Server side of `name`'s connection: its TCP socket, to stop and resume reading. */
async function serverTcp(name: string): Promise<{ pause(): void; resume(): void }> {
  for (const socket of h.server.io.of("/smcp").sockets.values()) {
    if ((socket.data as { member?: { name?: unknown } | null }).member?.name !== name) continue;
    if (socket.conn.transport.name !== "websocket") {
      await new Promise((resolve) => socket.conn.once("upgrade", resolve));
    }
    const ws = (socket.conn.transport as unknown as { socket?: { _socket?: unknown } }).socket;
    const tcp = ws?._socket as { pause(): void; resume(): void } | undefined;
    assert.ok(tcp, "no TCP socket under the Server's WebSocket transport");
    return tcp;
  }
  throw new Error(`no socket for ${name}`);
}

/** The value of a metric of `pc` (summed over its series). */
async function metric(pc: RunningComputer, name: string): Promise<number> {
  const text = await pc.metrics.registry.metrics();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.split(" ").pop());
  }
  return sum;
}

/**
 * Resolves once the Computer has taken every chunk request and no read is running: each was
 * answered (handed to its socket) or waits in its queue. A state, not an event: polled.
 */
async function settled(pc: RunningComputer): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const reading = await metric(pc, "a2c_computer_blob_in_flight");
    const queued = await metric(pc, "a2c_computer_blob_queued");
    const answered = await metric(pc, "a2c_computer_requests_total");
    if (reading === 0 && queued + answered === CHUNKS) return;
    if (Date.now() > deadline) throw new Error(`not settled: ${reading} ${queued} ${answered}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The order in which the Agent receives 32 chunk answers and one tools answer. */
async function arrivalOrder(name: string, maxUnsentBytes: number): Promise<string[]> {
  const producer = new TestProducer();
  const id = producer.addFile(file);
  let asked!: () => void;
  const toolsAsked = new Promise<void>((resolve) => (asked = resolve));
  const tools: ComputerService = {
    handlers: {
      [Events.GetTools]: async (req) => {
        asked();
        return { tools: [], req_id: req.req_id };
      },
    },
    producers: [],
    close: async () => undefined,
  };
  const pc: RunningComputer = await startHarnessComputer(h, dir, {
    name,
    stateDir: join(dir, `state-${name}`),
    services: [producersOnly(producer), tools],
    // Lifted, both bounds are: the bytes and the time (D109).
    blob: { maxUnsentBytes, ...(maxUnsentBytes > 1e9 ? { unsentTargetMs: 0 } : {}) },
  });
  try {
    await upgraded(pc);
    const handle = pc.minter.mint("tool", { id });
    const tcp = await serverTcp(name);
    tcp.pause();
    const order: string[] = [];
    const answers: Promise<void>[] = [];
    for (let i = 0; i < CHUNKS; i++) {
      const req = request("agent-1", name, {
        blob_handle: handle,
        chunk_offset: i * CHUNK,
        max_chunk_bytes: CHUNK,
        blob_format: "binary",
      });
      answers.push(
        agent
          .timeout(60_000)
          .emitWithAck(Events.GetBlob, req)
          .then((ret: { blob?: unknown }) => {
            assert.ok(Buffer.isBuffer(ret.blob), JSON.stringify(ret).slice(0, 200));
            order.push("chunk");
          }),
      );
    }
    await settled(pc);
    answers.push(
      agent
        .timeout(60_000)
        .emitWithAck(Events.GetTools, request("agent-1", name, {}))
        .then(() => void order.push("tools")),
    );
    await toolsAsked;
    await new Promise((resolve) => setImmediate(resolve)); // its answer is in the socket
    tcp.resume();
    await Promise.all(answers);
    return order;
  } finally {
    await pc.close();
  }
}

void test("with the bound, the tools answer overtakes most queued chunk answers", async () => {
  const order = await arrivalOrder("pc-bounded", 256 * 1024);
  const after = order.length - 1 - order.indexOf("tools");
  assert.ok(after >= CHUNKS / 3, `only ${after} of ${CHUNKS} chunk answers came after it`);
});

void test("without it, the tools answer waits behind every chunk already read", async () => {
  const order = await arrivalOrder("pc-unbounded", 1e12);
  const after = order.length - 1 - order.indexOf("tools");
  assert.ok(after <= 2, `${after} chunk answers came after it`);
});
