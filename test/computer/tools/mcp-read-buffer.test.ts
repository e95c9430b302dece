/**
 * Fast path `mcp_read_buffer` on a real Computer with a real stdio MCP server (the demo server):
 * with it on (and reported on), the live SDK transport reads with the linear buffer and a tool
 * result of hundreds of kilobytes (many pipe reads) arrives intact; with it off, the SDK's own
 * buffer reads it, as stock.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../../computer/computer.ts";
import { LinearReadBuffer } from "../../../computer/transport/mcp-read-buffer.ts";
import { encodePng } from "../../../computer/tools/png.ts";
import type { ToolService } from "../../../computer/tools/service.ts";
import { CallToolResultSchema } from "../../../protocol/index.ts";
import { request, ServerHarness, type Socket } from "../../support/server-harness.ts";
import { demoServer } from "../../support/tools-harness.ts";
import { startHarnessComputer } from "../support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-mcp_read_buffer-"));
const mcpConfig = join(dir, "mcp.json");
let h: ServerHarness;
let agent: Socket;

before(async () => {
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { demo: demoServer() } }));
  h = await ServerHarness.start();
  agent = await h.agent("office-1", "agent-1");
});
after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The read buffer of the demo server's live SDK transport (the tool service starts it first). */
function readBufferOf(pc: RunningComputer): unknown {
  const tools = pc.services.find((s) => "connection" in s) as ToolService;
  const client = tools.connection("demo")?.liveClient;
  assert.ok(client, "the demo server is not up");
  return (client.transport as unknown as { _readBuffer: unknown })._readBuffer;
}

/** A noisy PNG of ~480 KB (~640 KB of base64 on the pipe) arrives with the right digest. */
async function bigResultArrives(name: string): Promise<void> {
  const expected = encodePng({ width: 400, height: 400, noiseSeed: 400 * 7919 + 400 });
  const ret = await agent.timeout(120_000).emitWithAck(
    "client:tool_call",
    request("agent-1", name, {
      tool_name: "demo__png",
      params: { width: 400, height: 400, noise: true },
      timeout: 60,
    }),
  );
  const item = CallToolResultSchema.parse(ret).content[1] as { _meta: Record<string, unknown> };
  assert.equal(item._meta.a2c_total_size, expected.length);
  assert.equal(item._meta.a2c_sha256, createHash("sha256").update(expected).digest("hex"));
}

for (const on of [true, false]) {
  void test(`${on ? "on" : "off"}: the ${on ? "linear" : "SDK's own"} buffer reads a big tool result`, async () => {
    const name = on ? "pc-on" : "pc-off";
    const pc = await startHarnessComputer(h, dir, {
      name,
      stateDir: join(dir, `state-${name}`),
      mcpConfig,
      fastPaths: { mcpReadBuffer: on },
    });
    try {
      assert.equal(pc.fastPaths["mcp_read_buffer"], on ? "on" : "off");
      assert.equal(readBufferOf(pc) instanceof LinearReadBuffer, on);
      await bigResultArrives(name);
    } finally {
      await pc.close();
    }
  });
}
