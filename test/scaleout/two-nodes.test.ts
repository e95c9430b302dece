/**
 * Two Server nodes on one real Redis: an Agent on node A works with a real Computer on
 * node B (list_room, get_skill + verified blob download in base64 and binary carriage, tool calls
 * with a sidebanded item), the office rules hold across nodes, notifications cross nodes both
 * ways, and a Computer that drops on node B answers A's in-flight request at once (D11).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient, ComputerNotFoundError, JoinOfficeError } from "../../agent/index.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { startRedis, type RedisInstance } from "../support/redis.ts";
import {
  TOKEN,
  computer,
  joinOffice,
  rawSocket,
  removeHome,
  skillHome,
  startNode,
  waitFor,
  type SkillHome,
  type TestNode,
} from "./cluster-harness.ts";

const OFFICE = "office-two-nodes";
let redis: RedisInstance;
let a: TestNode;
let b: TestNode;
let home: SkillHome;
let pc: RunningComputer;
let agent: AgentClient;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  redis = await startRedis();
  home = await skillHome(3 * 1024 * 1024 + 12345);
  a = await startNode(redis.url, { prefix: "two" });
  b = await startNode(redis.url, { prefix: "two" });
  pc = await computer(b.url, OFFICE, "pc-b", home);
  agent = new AgentClient({ url: a.url, token: TOKEN, name: "agent-a" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
});

after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await agent?.close();
  await pc?.close();
  await a?.close();
  await b?.close();
  await redis?.stop();
  if (home) await removeHome(home);
});

void test("list_room through node A sees the Computer on node B", async () => {
  const sessions = await agent.listRoom();
  assert.deepEqual(
    sessions.map((s) => [s.role, s.name]),
    [
      ["agent", "agent-a"],
      ["computer", "pc-b"],
    ],
  );
  assert.ok(sessions.every((s) => s.office_id === OFFICE && s.a2c_version === "0.4.0"));
});

void test("an Agent on node A downloads a blob from the Computer on node B, verified", async () => {
  const skill = await agent.getSkillRaw("pc-b", "big", "data.bin");
  const handle = (skill as { blob_handle?: string }).blob_handle;
  assert.equal(typeof handle, "string", "a 3 MiB file is served through a handle");
  const out = join(home.dir, "download.bin");
  const info = await agent.downloadBlob("pc-b", handle!, out, { chunkBytes: 256 * 1024 });
  assert.equal(info.sha256, home.sha256);
  assert.equal(info.totalSize, home.size);
  const bytes = await readFile(out);
  assert.equal(createHash("sha256").update(bytes).digest("hex"), home.sha256);
  // D19 binary carriage crosses the adapter as Buffers (msgpack bin), not as strings.
  const viaBinary = await agent.readBlob("pc-b", handle!, { binary: true });
  assert.equal(createHash("sha256").update(viaBinary).digest("hex"), home.sha256);
});

void test("an Agent on node A calls tools on node B, including a sidebanded item", async () => {
  const echo = await agent.callTool("pc-b", "demo__echo", { text: "across nodes" }, { timeout: 3 });
  assert.deepEqual(echo.content, [{ type: "text", text: "across nodes" }]);
  const tools = await agent.getTools("pc-b");
  assert.ok(tools.some((t) => t.name === "demo__png"));
  const png = await agent.callTool(
    "pc-b",
    "demo__png",
    { width: 300, height: 300, noise: true },
    { timeout: 3 },
  );
  assert.notEqual(png.isError, true);
  assert.ok(png.content.some((item) => item.type === "image"));
});

void test("a second Agent joining the same office through node B is refused", async () => {
  const second = new AgentClient({ url: b.url, token: TOKEN, name: "agent-b" });
  cleanups.push(() => second.close());
  await second.connect();
  await assert.rejects(second.joinOffice(OFFICE), (err: unknown) => {
    assert.ok(err instanceof JoinOfficeError);
    assert.match(err.message, /Room already has an agent/);
    return true;
  });
});

void test("a duplicate Computer name across nodes is refused; the original keeps working", async () => {
  const dup = await rawSocket(a.url);
  cleanups.push(async () => dup.close());
  assert.deepEqual(await joinOffice(dup, "computer", "pc-b", OFFICE), [
    false,
    `name_taken: A Computer named 'pc-b' is already in office '${OFFICE}'`,
  ]);
  const echo = await agent.callTool("pc-b", "demo__echo", { text: "still here" }, { timeout: 3 });
  assert.deepEqual(echo.content, [{ type: "text", text: "still here" }]);
});

void test("notifications reach members on both nodes", async () => {
  // A watcher Computer on node B hears what happens on node A, and the Agent on A hears B.
  const watcher = await rawSocket(b.url);
  cleanups.push(async () => watcher.close());
  const agentHearsWatcher = new Promise<string>((resolve) =>
    agent.once("computer_joined", (name) => resolve(name)),
  );
  assert.deepEqual(await joinOffice(watcher, "computer", "watcher-b", OFFICE), [true, null]);
  assert.equal(await agentHearsWatcher, "watcher-b");

  const onA = await rawSocket(a.url);
  cleanups.push(async () => onA.close());
  const enter = waitFor(watcher, "notify:enter_office", (n: { computer?: string }) => {
    return n.computer === "pc-a";
  });
  assert.deepEqual(await joinOffice(onA, "computer", "pc-a", OFFICE), [true, null]);
  assert.deepEqual(await enter, { office_id: OFFICE, computer: "pc-a" });

  const update = waitFor(watcher, "notify:update_tool_list");
  const agentHears = new Promise<string>((resolve) =>
    agent.once("tools_updated", (name) => resolve(name)),
  );
  onA.emit("server:update_tool_list", { computer: "pc-a" });
  assert.deepEqual(await update, { computer: "pc-a" });
  assert.equal(await agentHears, "pc-a");

  const left = waitFor(watcher, "notify:leave_office", (n: { computer?: string }) => {
    return n.computer === "pc-a";
  });
  onA.close();
  assert.deepEqual(await left, { office_id: OFFICE, computer: "pc-a" });
});

void test("a Computer on node B that drops answers node A's in-flight request at once (D11)", async () => {
  const flaky = await rawSocket(b.url);
  cleanups.push(async () => flaky.close());
  assert.deepEqual(await joinOffice(flaky, "computer", "flaky-b", OFFICE), [true, null]);
  // The request reaches the Computer on B, which never answers and drops instead.
  flaky.on("client:get_tools", () => flaky.close());
  await assert.rejects(agent.getTools("flaky-b", { timeoutMs: 20_000 }), (err: unknown) => {
    assert.ok(err instanceof ComputerNotFoundError, String(err));
    assert.equal(err.code, 404);
    assert.deepEqual(err.details, { computer_name: "flaky-b", reason: "disconnected" });
    return true;
  });
  assert.equal(a.server.inflight(), 0);
});
