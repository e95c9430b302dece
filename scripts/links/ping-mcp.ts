/**
 * The MCP server (stdio, the official SDK) each Computer of the link harness runs: one trivial
 * tool, `ping`, whose answer is a few bytes, so a timed `tool_call` measures the path and the
 * queues on it, not the tool.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "links-ping", version: "1.0.0" });
server.registerTool(
  "ping",
  { description: "Answers pong.", annotations: { readOnlyHint: true } },
  () => ({ content: [{ type: "text", text: "pong" }] }),
);
await server.connect(new StdioServerTransport());
