/**
 * Uploads across Server nodes on one real Redis: an Agent on node A uploads to a real Computer on
 * node B (verified, binary attachments across the adapter), and node A bounds the upload chunks
 * it forwards to a Computer on another node as it does for its own sockets (D79, D107):
 * beyond `maxUnreadBytes` unanswered, a chunk is answered `busy` (`upload_bytes_in_flight`) and
 * never reaches the Computer; answers, or the Computer dropping, give the room back. An SDK
 * upload through a node with a tight bound rewinds within its session and ends verified.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Socket } from "socket.io-client";
import { AgentClient } from "../../agent/index.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { computerNotFound } from "../../protocol/index.ts";
import { writeRandomFile } from "../support/agent-stack.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import { emitAck, request } from "../support/server-harness.ts";
import {
  TOKEN,
  WAIT_MS,
  joinOffice,
  quiet,
  rawSocket,
  removeHome,
  skillHome,
  startNode,
  type SkillHome,
  type TestNode,
} from "./cluster-harness.ts";

const MiB = 1024 * 1024;
const OFFICE = "office-upload-nodes";
/** The raw Agent and Computer's office (one Agent per office). */
const RAW_OFFICE = "office-upload-raw";
const UPLOAD_ID = "0".repeat(32);
let redis: RedisInstance;
let a: TestNode;
let b: TestNode;
let tight: TestNode;
let home: SkillHome;
let pc: RunningComputer;
let agent: AgentClient;
let rawAgent: Socket;
let rawPc: Socket;
/** Requests the raw Computer on node B got, with their acks (answered by each test). */
const held: Array<{ req: Record<string, unknown>; ack: (a: unknown) => void }> = [];

before(async () => {
  redis = await startRedis();
  home = await skillHome(1024);
  a = await startNode(redis.url, { prefix: "upl", maxUnreadBytes: 2 * MiB });
  b = await startNode(redis.url, { prefix: "upl" });
  tight = await startNode(redis.url, { prefix: "upl", maxUnreadBytes: 20 * 1024 });
  pc = await startComputer({
    server: b.url,
    office: OFFICE,
    name: "pc-b",
    token: TOKEN,
    stateDir: join(home.dir, "state"),
    landingRoot: join(home.dir, "land"),
    workers: 0,
    startTimeoutMs: WAIT_MS,
    logger: quiet,
  });
  agent = new AgentClient({ url: a.url, token: TOKEN, name: "agent-a" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  await agent.waitForComputer("pc-b", { timeoutMs: WAIT_MS });
  rawPc = await rawSocket(b.url);
  assert.deepEqual(await joinOffice(rawPc, "computer", "raw-b", RAW_OFFICE), [true, null]);
  rawPc.on("client:put_blob", (req: Record<string, unknown>, ack: (a: unknown) => void) => {
    held.push({ req, ack });
  });
  rawAgent = await rawSocket(a.url);
  assert.deepEqual(await joinOffice(rawAgent, "agent", "raw-agent", RAW_OFFICE), [true, null]);
});

after(async () => {
  rawAgent?.disconnect();
  rawPc?.disconnect();
  await agent?.close();
  await pc?.close();
  for (const node of [a, b, tight]) await node?.close();
  await redis?.stop();
  if (home) await removeHome(home);
});

/** A later chunk of `size` raw bytes, as base64, from the raw Agent to the raw Computer. */
function chunk(size: number): Record<string, unknown> {
  return request("raw-agent", "raw-b", {
    upload_id: UPLOAD_ID,
    chunk_offset: 0,
    eof: false,
    blob: randomBytes(size).toString("base64"),
  });
}

async function until(check: () => boolean): Promise<void> {
  const end = Date.now() + WAIT_MS;
  while (!check()) {
    assert.ok(Date.now() < end, "waited too long");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const answerAll = (): void => {
  for (const { req, ack } of held.splice(0)) {
    ack({ chunk_offset: 0, req_id: req.req_id, upload_id: UPLOAD_ID });
  }
};

void test("an Agent on node A uploads to the Computer on node B: stored, verified, binary", async () => {
  const file = join(home.dir, "up.bin");
  const sha = await writeRandomFile(file, 6 * MiB + 321);
  const r = await agent.uploadBlob("pc-b", file, { nameHint: "up.bin" });
  assert.equal(r.sha256, sha);
  assert.equal(r.carriage, "binary", "attachments cross the adapter");
  assert.ok((await readFile(r.landingPath)).equals(await readFile(file)));
  const stored = (await readdir(join(home.dir, "land"))).filter((n) => n !== ".a2c-upload");
  assert.deepEqual(stored, [r.landingPath.split("/").pop()]);
});

void test("node A bounds the chunks it forwards to a Computer on node B: busy beyond 2 MiB, then admitted", async () => {
  // 480 KiB raw is 640 KiB of base64: three fit under 2 MiB, the fourth does not.
  const sent = [0, 1, 2].map(() => emitAck(rawAgent, "client:put_blob", chunk(480 * 1024)));
  await until(() => held.length === 3);
  const [refused] = await emitAck(rawAgent, "client:put_blob", chunk(480 * 1024));
  const r = refused as { code: number; details: Record<string, unknown> };
  assert.equal(r.code, 500);
  assert.equal(r.details.reason, "busy");
  assert.equal(r.details.limit, "upload_bytes_in_flight");
  assert.equal(r.details.max, 2 * MiB);
  answerAll();
  await Promise.all(sent);
  // Node A's messages reach node B in order: had the refused chunk been forwarded, it would
  // arrive before this one.
  const after = chunk(480 * 1024);
  const next = emitAck(rawAgent, "client:put_blob", after);
  await until(() => held.length === 1);
  assert.equal(held[0]!.req.req_id, after.req_id, "the refused chunk never reached the Computer");
  answerAll();
  assert.equal(((await next)[0] as { upload_id: string }).upload_id, UPLOAD_ID);
});

void test("the Computer on node B drops with chunks in flight: answered 404 disconnected, room released", async () => {
  const sent = [0, 1, 2].map(() => emitAck(rawAgent, "client:put_blob", chunk(480 * 1024)));
  await until(() => held.length === 3);
  rawPc.disconnect();
  held.length = 0;
  for (const [answer] of await Promise.all(sent)) {
    assert.deepEqual(answer, computerNotFound("raw-b", "disconnected"));
  }
  // The same name joins again on node B: all 2 MiB are free for it.
  rawPc = await rawSocket(b.url);
  assert.deepEqual(await joinOffice(rawPc, "computer", "raw-b", RAW_OFFICE), [true, null]);
  rawPc.on("client:put_blob", (req: Record<string, unknown>, ack: (a: unknown) => void) => {
    held.push({ req, ack });
  });
  const again = [0, 1, 2].map(() => emitAck(rawAgent, "client:put_blob", chunk(480 * 1024)));
  await until(() => held.length === 3);
  answerAll();
  for (const [answer] of await Promise.all(again)) {
    assert.equal((answer as { upload_id?: string }).upload_id, UPLOAD_ID);
  }
});

void test("an SDK upload through a node with a 20 KiB bound rewinds within its session, verified", async () => {
  await agent.close(); // one Agent per office
  const client = new AgentClient({ url: tight.url, token: TOKEN, name: "agent-t" });
  try {
    await client.connect();
    await client.joinOffice(OFFICE);
    await client.waitForComputer("pc-b", { timeoutMs: WAIT_MS });
    const data = randomBytes(MiB + 77);
    const r = await client.uploadBlob("pc-b", data, { nameHint: "tight.bin" });
    assert.ok((await readFile(r.landingPath)).equals(data));
    assert.ok(r.stats.busy >= 1 && r.stats.rewinds >= 1, JSON.stringify(r.stats));
    assert.equal(r.stats.restarts, 0, "one session");
  } finally {
    await client.close();
  }
});
