// @pure
/**
 * Protocol 0.4.0's ToolMeta layers on this Computer: `tool_meta[tool]` over `default_tool_meta`
 * (both from the MCP config) over the server's `Tool._meta.a2c_tool_meta` (tags only); a malformed
 * declaration is dropped, never an error; `alias` is refused in the config.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { parseMcpConfig } from "../../../computer/tools/mcp-config.ts";
import { toolMetaOf, toSmcpTool } from "../../../computer/tools/service.ts";

const tool = (name: string, declared?: unknown): Tool => ({
  name,
  inputSchema: { type: "object" },
  ...(declared !== undefined ? { _meta: { a2c_tool_meta: declared } } : {}),
});

void test("precedence: tool_meta[tool] > default_tool_meta > server; [] clears; null inherits", () => {
  const config = parseMcpConfig({
    mcpServers: {
      demo: {
        command: "node",
        default_tool_meta: { tags: ["d"], auto_apply: false },
        tool_meta: { a: { tags: ["t"] }, b: { tags: [] }, c: { tags: null, auto_apply: true } },
      },
    },
  }).demo;
  const server = { tags: ["s"], auto_apply: true, ret_object_mapper: { x: 1 } };
  assert.deepEqual(toolMetaOf(tool("a", server), config).meta, {
    auto_apply: false,
    alias: null,
    tags: ["t"],
    ret_object_mapper: null,
  });
  assert.deepEqual(toolMetaOf(tool("b", server), config).meta?.tags, []);
  assert.deepEqual(toolMetaOf(tool("c", server), config).meta?.tags, ["d"]);
  assert.equal(toolMetaOf(tool("c", server), config).meta?.auto_apply, true);
  assert.deepEqual(toolMetaOf(tool("z", server), undefined).meta, {
    auto_apply: null,
    alias: null,
    tags: ["s"],
    ret_object_mapper: null,
  });
});

void test("a malformed declaration is dropped (flagged for one warning), never thrown", () => {
  for (const bad of ["tags", 5, { tags: "x" }, { tags: [1] }]) {
    const r = toolMetaOf(tool("t", bad), undefined);
    assert.equal(r.malformed, true, JSON.stringify(bad));
    assert.equal(r.meta, undefined);
  }
  assert.deepEqual(toolMetaOf(tool("t"), undefined), { meta: undefined, malformed: false });
  const withDefaults = { default_tool_meta: { tags: ["d"] } };
  assert.deepEqual(toolMetaOf(tool("t", { tags: [1] }), withDefaults).meta?.tags, ["d"]);
});

void test("on the wire: a JSON string beside MCP_TOOL_ANNOTATION", () => {
  const t = { ...tool("x"), annotations: { title: "X" } };
  const { meta } = toolMetaOf(tool("x", { tags: ["a"] }), undefined);
  const smcp = toSmcpTool("demo", t, meta);
  assert.equal(typeof smcp.meta?.a2c_tool_meta, "string");
  assert.deepEqual(JSON.parse(smcp.meta?.a2c_tool_meta as string).tags, ["a"]);
  assert.equal(typeof smcp.meta?.MCP_TOOL_ANNOTATION, "string");
});

void test("the config refuses alias and unknown ToolMeta fields", () => {
  assert.throws(
    () => parseMcpConfig({ mcpServers: { d: { command: "x", tool_meta: { a: { alias: "b" } } } } }),
    /invalid MCP config/,
  );
  assert.throws(
    () => parseMcpConfig({ mcpServers: { d: { command: "x", default_tool_meta: { tags: "a" } } } }),
    /invalid MCP config/,
  );
});
