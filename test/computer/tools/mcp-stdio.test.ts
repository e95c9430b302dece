/**
 * Our stdio MCP client transport (computer/tools/mcp-stdio.ts) on the MCP SDK's public
 * `Transport` interface:
 * - the official SDK `Client` over it talks to a real stdio MCP server (the demo server, built on
 *   the SDK's `McpServer`): an 8 MB tool result (hundreds of pipe reads) arrives intact and the
 *   next call still works;
 * - a message over `maxMessageBytes` is an error that closes the transport, never a buffer that
 *   grows without bound;
 * - framing: messages split anywhere (inside a multi-byte character too), several per read, CRLF
 *   line ends, a line that is not JSON-RPC (reported, skipped), written by a real child process;
 * - a real Computer's tool service runs its stdio servers through it, and a big tool result
 *   reaches the Agent through the Server with the right digest.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { StdioClientTransport } from "../../../computer/tools/mcp-stdio.ts";
import { encodePng } from "../../../scripts/demo/png.ts";
import type { ToolService } from "../../../computer/tools/service.ts";
import { CallToolResultSchema } from "../../../protocol/index.ts";
import { request, ServerHarness, type Socket } from "../../support/server-harness.ts";
import { demoServer } from "../../support/tools-harness.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-mcp-stdio-"));
let h: ServerHarness;
let agent: Socket;

before(async () => {
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
});
after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function demoClient(maxMessageBytes?: number): Promise<Client> {
  const client = new Client({ name: "test", version: "1.0.0" });
  const transport = new StdioClientTransport({
    ...(await demoServer()),
    ...(maxMessageBytes !== undefined ? { maxMessageBytes } : {}),
  });
  await client.connect(transport);
  return client;
}

void test("the SDK's Client over it: an 8 MB result arrives whole, and the next call works", async () => {
  const client = await demoClient(16 * 1024 * 1024);
  try {
    const size = 8 * 1024 * 1024;
    const big = await client.callTool({ name: "huge_text", arguments: { size } }, undefined, {
      timeout: 120_000,
    });
    const text = (big.content as Array<{ text: string }>)[0]!.text;
    assert.equal(text.length, size);
    assert.ok(/^x+$/.test(text));
    const echo = await client.callTool({ name: "echo", arguments: { text: "still here" } });
    assert.match(JSON.stringify(echo.content), /still here/);
  } finally {
    await client.close();
  }
});

void test("a message over maxMessageBytes is an error that closes the transport", async () => {
  const client = new Client({ name: "test", version: "1.0.0" });
  const transport = new StdioClientTransport({
    ...(await demoServer()),
    maxMessageBytes: 256 * 1024,
  });
  const errors: Error[] = [];
  const closed = new Promise<void>((resolve) => (client.onclose = resolve));
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  const pid = transport.pid;
  assert.ok(pid !== null);
  await assert.rejects(client.callTool({ name: "huge_text", arguments: { size: 1024 * 1024 } }));
  await closed;
  assert.ok(
    errors.some((e) => /exceeded 262144 bytes/.test(e.message)),
    String(errors),
  );
  assert.equal(transport.pid, null, "the child is gone");
});

void test("framing: split anywhere, several per read, CRLF, a bad line skipped", async () => {
  const messages: JSONRPCMessage[] = [
    { jsonrpc: "2.0", id: 1, result: { pad: "a".repeat(30_000) } },
    { jsonrpc: "2.0", id: 2, result: { text: "é✓ ünïcødé" } },
    { jsonrpc: "2.0", method: "notifications/x" },
  ];
  const wire = Buffer.from(
    `${JSON.stringify(messages[0])}\r\n{"not":"json-rpc"}\n${JSON.stringify(messages[1])}\n` +
      `${JSON.stringify(messages[2])}\n`,
  );
  // The child writes the bytes in 7-byte pieces (some split a multi-byte character), one per turn.
  const script = `const b = Buffer.from(${JSON.stringify(wire.toString("base64"))}, "base64");
    let i = 0; const next = () => { if (i >= b.length) return; process.stdout.write(b.subarray(i, i += 7), next); }; next();
    process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`;
  const transport = new StdioClientTransport({ command: process.execPath, args: ["-e", script] });
  const got: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  const all = new Promise<void>((resolve) => {
    transport.onmessage = (m) => {
      got.push(m);
      if (got.length === messages.length) resolve();
    };
  });
  transport.onerror = (err) => errors.push(err);
  await transport.start();
  await all;
  await transport.close();
  assert.deepEqual(got, messages);
  assert.equal(errors.length, 1, "the line that is not JSON-RPC was reported");
});

void test("a real Computer's tool service uses it; a big result reaches the Agent", async () => {
  const mcpConfig = join(dir, "mcp.json");
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { demo: await demoServer() } }));
  const pc = await startHarnessComputer(h, dir, { mcpConfig });
  try {
    const tools = pc.services.find((s) => "connection" in s) as ToolService;
    const client = tools.connection("demo")?.liveClient;
    assert.ok(client?.transport instanceof StdioClientTransport);
    // A noisy PNG of ~480 KB (~640 KB of base64 on the pipe) arrives with the right digest.
    const expected = encodePng({ width: 400, height: 400, noiseSeed: 400 * 7919 + 400 });
    const ret = await agent.timeout(120_000).emitWithAck(
      "client:tool_call",
      request("agent-1", "pc-1", {
        tool_name: "demo__png",
        params: { width: 400, height: 400, noise: true },
        timeout: 60,
      }),
    );
    const item = CallToolResultSchema.parse(ret).content[1] as { _meta: Record<string, unknown> };
    assert.equal(item._meta.a2c_total_size, expected.length);
    assert.equal(item._meta.a2c_sha256, createHash("sha256").update(expected).digest("hex"));
  } finally {
    await pc.close();
  }
});
