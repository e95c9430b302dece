// @both-transports
// The unread bound (server/outbound.ts, `maxUnreadBytes`; D29, D52): the bytes queued for a
// connection (answers it has not read) may exceed what it took lately by `maxUnreadBytes`, no
// more. A client that stops reading and keeps asking for chunks is refused `busy` with
// `limit: "unread_bytes"` long before its queue reaches `maxQueuedBytes`, so the Server relays
// (and the Computer produces) only a few MiB for it; once it reads again it is served. Requests
// waiting at a slow Computer are not unread bytes: a reading client is never refused for them.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import {
  ServerHarness,
  clientTcp,
  emitAck,
  request,
  wholeChunkAck,
  type Socket,
} from "../support/server-harness.ts";

const MiB = 1024 * 1024;
const CHUNK = 256 * 1024;
const MAX_QUEUED = 64 * MiB;
const MAX_UNREAD = 4 * MiB;
const BLOB = randomBytes(CHUNK).toString("base64");

const harnesses: ServerHarness[] = [];
after(() => Promise.all(harnesses.map((h) => h.close())));

interface Pair {
  h: ServerHarness;
  agent: Socket;
  /** Chunk requests that reached the Computer. */
  forwarded: () => number;
  /** While set, the Computer keeps its acks until `answerHeld` (answers are in flight). */
  holding: boolean;
  answerHeld: () => void;
  /** Called after each request reaches the Computer. */
  onForward: () => void;
}

async function pair(): Promise<Pair> {
  const h = await ServerHarness.start({ maxQueuedBytes: MAX_QUEUED, maxUnreadBytes: MAX_UNREAD });
  harnesses.push(h);
  const { agent, pc } = await h.webSocketPair();
  let forwarded = 0;
  const held: (() => void)[] = [];
  const p: Pair = {
    h,
    agent,
    forwarded: () => forwarded,
    holding: false,
    answerHeld: () => held.splice(0).forEach((answer) => answer()),
    onForward: () => {},
  };
  pc.on("client:get_blob", (req: { req_id: string }, ack: (a: unknown) => void) => {
    forwarded += 1;
    const answer = (): void => ack(wholeChunkAck(BLOB, req.req_id));
    if (p.holding) held.push(answer);
    else answer();
    p.onForward();
  });
  return p;
}

const chunk = (agent: Socket): Promise<unknown[]> =>
  emitAck(
    agent,
    "client:get_blob",
    request("agent-1", "pc-1", { blob_handle: "h", max_chunk_bytes: CHUNK }),
  );

/** Requests the Server refused for a bound on what it holds (`limit`: one of them, or any). */
async function refusals(h: ServerHarness, limit?: string): Promise<number> {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^a2c_limit_refusals_total\{limit="([^"]+)"\} (\S+)$/gm))
    if (limit === undefined || m[1] === limit) n += Number(m[2]);
  return n;
}

const isUnreadBusy = (a: unknown): boolean =>
  (a as { details?: { limit?: string } }).details?.limit === "unread_bytes";

void test("a client that stops reading is held to the unread bound, then served when it reads", async () => {
  const { h, agent, forwarded } = await pair();
  const tcp = clientTcp(agent);
  tcp.pause();
  const answers: Promise<unknown[]>[] = [];
  // The flood: one request at a time, each after the previous one was either forwarded or
  // refused (the refusal itself waits in the unread socket; the counter says it happened).
  let refused = 0;
  for (let i = 0; i < 1_000 && refused < 20; i++) {
    const before = forwarded();
    answers.push(chunk(agent));
    for (;;) {
      if (forwarded() > before) break;
      const now = await refusals(h);
      if (now > refused) {
        refused = now;
        break;
      }
    }
  }
  assert.equal(await refusals(h, "unread_bytes"), refused, "refused for the unread bound");
  const relayed = forwarded() * BLOB.length;
  // Without the unread bound the Server forwards until ~64 MiB are queued. With it: 4 MiB plus
  // what the kernel's socket buffers took (they count as read), plus one answer.
  assert.ok(relayed < 16 * MiB, `relayed ${relayed} bytes for a client that does not read`);

  tcp.resume();
  const settled = (await Promise.all(answers)).map(([a]) => a);
  assert.equal(settled.filter(isUnreadBusy).length, refused);
  assert.equal(
    settled.filter((a) => typeof (a as { blob?: unknown }).blob === "string").length,
    forwarded(),
  );
  const [again] = await chunk(agent);
  assert.equal(typeof (again as { blob?: unknown }).blob, "string", "served again once it reads");
});

void test("answers a slow Computer still owes are not unread: a reading client is not refused", async () => {
  const p = await pair();
  // 24 reservations of ~350 KB (twice the 4 MiB bound) wait at a Computer that has not answered.
  const BURST = 24;
  p.holding = true;
  let arrived!: () => void;
  const allForwarded = new Promise<void>((resolve) => (arrived = resolve));
  p.onForward = () => {
    if (p.forwarded() === BURST) arrived();
  };
  const answers = Array.from({ length: BURST }, () => chunk(p.agent));
  await allForwarded;
  assert.equal(await refusals(p.h), 0, "nothing refused while the Computer is slow");
  p.holding = false;
  p.answerHeld();
  const settled = (await Promise.all(answers)).map(([a]) => a);
  assert.equal(
    settled.filter((a) => typeof (a as { blob?: unknown }).blob === "string").length,
    BURST,
  );
  assert.equal(p.h.server.outbound.reservedTotal, 0, "every reservation given back");
});
