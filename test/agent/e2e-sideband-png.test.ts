/**
 * End to end: a tool of the demo MCP server (real stdio MCP server behind a real Computer and
 * Server) returns a 5 MB PNG, the Computer sidebands it, and `callTool` restores it
 * byte-identical with the `a2c_*` keys gone.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import type { RunningComputer } from "../../computer/computer.ts";
import { pngOfAbout } from "../../scripts/demo/content.ts";
import { inProcessComputer, startAgentStack, type AgentStack } from "../support/agent-stack.ts";
import { demoServer } from "../support/tools-harness.ts";

let stack: AgentStack;
let computer: RunningComputer;

before(async () => {
  stack = await startAgentStack();
  const mcp = join(stack.dir, "mcp.json");
  await writeFile(
    mcp,
    JSON.stringify({
      mcpServers: {
        demo: await demoServer(),
      },
    }),
  );
  computer = await inProcessComputer(stack, "pc", { mcpConfig: mcp });
});
after(async () => {
  await computer?.close();
  await stack?.close();
});

void test("callTool: a sidebanded 5 MB PNG comes back byte-identical", async () => {
  const agent = new AgentClient({ url: stack.url, token: stack.token });
  await agent.connect();
  await agent.joinOffice(stack.office);
  try {
    const raw = await agent.callTool(
      "pc",
      "demo__many_images",
      { count: 1, size: 5_000_000 },
      {
        restore: false,
      },
    );
    const item = raw.content[0] as { data: string; _meta?: Record<string, unknown> };
    assert.equal(item.data, "", "the bytes travelled through the sideband");
    assert.equal(typeof item._meta?.a2c_blob_handle, "string");
    const res = await agent.callTool("pc", "demo__many_images", { count: 1, size: 5_000_000 });
    const restored = res.content[0] as { data: string; _meta?: unknown; mimeType: string };
    const want = pngOfAbout(5_000_000, 1);
    assert.ok(Buffer.from(restored.data, "base64").equals(want), "byte-identical PNG");
    assert.equal(restored.mimeType, "image/png");
    assert.equal(restored._meta, undefined, "a2c_* keys removed");
  } finally {
    await agent.close();
  }
});
