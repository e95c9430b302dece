// @both-transports
/**
 * End to end through the real Server and the real Computer (`startComputer --mcp-config`): a plain
 * socket.io-client Agent lists tools, calls the demo server's png tool, finds the sidebanded item
 * and drains it with `client:get_blob` (byte for byte), cancels a slow call with
 * `server:tool_call_cancel` and sees `meta.a2c_cancelled` in the original ack, and is told
 * `notify:update_tool_list` when the MCP server's tool list changes.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../../computer/computer.ts";
import { encodePng } from "../../../scripts/demo/png.ts";
import {
  CallToolResultSchema,
  GetBlobRetSchema,
  GetToolsRetSchema,
  encodedAckBytes,
  type CallToolResult,
} from "../../../protocol/index.ts";
import { request, ServerHarness, waitFor, type Socket } from "../../support/server-harness.ts";
import { demoServer, textOf } from "../../support/tools-harness.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";

const ACK_WAIT_MS = 120_000;
const dir = mkdtempSync(join(tmpdir(), "a2c-tools-e2e-"));
let h: ServerHarness;
let pc: RunningComputer;
let agent: Socket;

before(async () => {
  const mcpConfig = join(dir, "mcp.json");
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { demo: await demoServer() } }));
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
  pc = await startHarnessComputer(h, dir, { mcpConfig });
});
after(async () => {
  await pc?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One ack argument, with a wait long enough for a loaded CI box (guard, not pacing). */
function ask(event: string, payload: unknown): Promise<unknown> {
  return agent.timeout(ACK_WAIT_MS).emitWithAck(event, payload);
}

async function toolCall(tool: string, params: object, extra: object = {}): Promise<CallToolResult> {
  const ret = await ask(
    "client:tool_call",
    request("agent-1", "pc-1", { tool_name: tool, params, timeout: 60, ...extra }),
  );
  return CallToolResultSchema.parse(ret);
}

void test("get_tools lists the demo server's tools", async () => {
  const ret = GetToolsRetSchema.parse(await ask("client:get_tools", request("agent-1", "pc-1")));
  const names = ret.tools.map((t) => t.name);
  assert.ok(names.includes("demo__png") && names.includes("demo__slow"), names.join(","));
});

void test("a 5 MB PNG arrives sidebanded and drains through client:get_blob byte for byte", async () => {
  const expected = encodePng({ width: 1400, height: 1200, noiseSeed: 1400 * 7919 + 1200 });
  const r = await toolCall("demo__png", { width: 1400, height: 1200, noise: true });
  assert.ok(encodedAckBytes(r) < 2_000, "the tool_call ack itself is small");
  const item = r.content[1] as { data: string; mimeType: string; _meta: Record<string, unknown> };
  assert.equal(item.data, "");
  assert.equal(item.mimeType, "image/png");
  const handle = item._meta.a2c_blob_handle as string;
  assert.equal(item._meta.a2c_total_size, expected.length);

  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const chunk = GetBlobRetSchema.parse(
      await ask(
        "client:get_blob",
        request("agent-1", "pc-1", { blob_handle: handle, chunk_offset: offset }),
      ),
    );
    assert.equal(chunk.sha256, item._meta.a2c_sha256);
    assert.equal(chunk.mime_type, "image/png");
    const bytes = Buffer.from(chunk.blob as string, "base64");
    parts.push(bytes);
    offset += bytes.length;
    if (chunk.eof) break;
  }
  const got = Buffer.concat(parts);
  assert.ok(got.equals(expected), "pulled bytes are the original PNG");
  assert.equal(createHash("sha256").update(got).digest("hex"), item._meta.a2c_sha256);
});

void test("server:tool_call_cancel interrupts a slow call: ack has meta.a2c_cancelled", async () => {
  const req = request("agent-1", "pc-1", {
    tool_name: "demo__slow",
    params: { ms: 60_000 },
    timeout: 120,
  });
  const pending = ask("client:tool_call", req);
  // The call is in flight at the MCP server once a later call on the same path has answered.
  assert.equal(textOf(await toolCall("demo__echo", { text: "ping" })), "ping");
  agent.emit("server:tool_call_cancel", { agent: "agent-1", req_id: req.req_id });
  const r = CallToolResultSchema.parse(await pending);
  assert.equal(r.isError, true);
  assert.equal(r.meta?.a2c_cancelled, true);
  assert.equal(r.meta?.a2c_cancel_reason, "agent_requested");
});

void test("an MCP tools/list_changed reaches the Agent as notify:update_tool_list", async () => {
  const notified = waitFor<{ computer: string }>(
    agent,
    "notify:update_tool_list",
    (p) => p.computer === "pc-1",
    ACK_WAIT_MS,
  );
  await toolCall("demo__toggle_extra", {});
  assert.deepEqual(await notified, { computer: "pc-1" });
  const ret = GetToolsRetSchema.parse(await ask("client:get_tools", request("agent-1", "pc-1")));
  assert.ok(ret.tools.some((t) => t.name === "demo__extra"));
});
