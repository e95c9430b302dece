/**
 * `client:get_tools` over the demo MCP server (protocol.md §8.1): exposed names, bundle_id, schemas,
 * annotations as a JSON string; plain calls: result-level `_meta` becomes `meta` (D25), tool
 * failures and unknown tools are isError CallToolResults (protocol.md §8.2, 4001 meaning).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GetToolsRetSchema, type GetToolsRet } from "../../../protocol/index.ts";
import {
  nextReqId,
  quietLog,
  textOf,
  toolFixture,
  type ToolFixture,
} from "../../support/tools-harness.ts";

let fx: ToolFixture;
before(async () => {
  fx = await toolFixture();
});
after(() => fx.close());

async function getTools(): Promise<GetToolsRet> {
  const handler = fx.service.handlers["client:get_tools"];
  assert.ok(handler);
  const reqId = nextReqId();
  const ret = await handler(
    { agent: "a", req_id: reqId, computer: fx.config.name },
    { signal: new AbortController().signal, log: quietLog },
  );
  const parsed = GetToolsRetSchema.parse(ret);
  assert.equal(parsed.req_id, reqId);
  return parsed;
}

void describe("client:get_tools", () => {
  void test("every demo tool is exposed as {bundle_id}__{tool} with its schemas", async () => {
    const { tools } = await getTools();
    const names = tools.map((t) => t.name);
    for (const t of ["echo", "add", "png", "audio", "resource_blob", "slow", "fail"]) {
      assert.ok(names.includes(`demo__${t}`), `missing demo__${t} in ${names.join(",")}`);
    }
    assert.ok(!names.includes("demo__extra"), "a disabled tool is not listed");
    for (const t of tools) {
      assert.equal(t.bundle_id, "demo");
      assert.equal(typeof t.description, "string");
      assert.equal(t.params_schema.type, "object");
    }
    const add = tools.find((t) => t.name === "demo__add");
    assert.deepEqual(Object.keys(add?.return_schema?.properties ?? {}), ["sum"]);
    assert.equal(tools.find((t) => t.name === "demo__png")?.return_schema, null);
  });

  void test("MCP annotations travel as a JSON string in meta.MCP_TOOL_ANNOTATION", async () => {
    const { tools } = await getTools();
    const echo = tools.find((t) => t.name === "demo__echo");
    const raw = echo?.meta?.MCP_TOOL_ANNOTATION;
    assert.equal(typeof raw, "string");
    assert.deepEqual(JSON.parse(raw as string), { readOnlyHint: true, title: "Echo" });
  });

  void test("0.4.0: a server-declared tag layer becomes the canonical a2c_tool_meta (tags only)", async () => {
    const { tools } = await getTools();
    const echo = tools.find((t) => t.name === "demo__echo");
    // The demo server declares {tags: ["text", "demo"], alias: "ignored"}: alias is filtered out.
    assert.deepEqual(JSON.parse(echo?.meta?.a2c_tool_meta as string), {
      auto_apply: null,
      alias: null,
      tags: ["text", "demo"],
      ret_object_mapper: null,
    });
    assert.equal(echo?.name, "demo__echo");
    const add = tools.find((t) => t.name === "demo__add");
    assert.equal(add?.meta?.a2c_tool_meta, undefined, "no layer says anything: no a2c_tool_meta");
  });
});

void describe("client:tool_call basics", () => {
  void test("result-level _meta from the MCP server is sent as meta (D25)", async () => {
    const r = await fx.call("demo__echo", { text: "hi" });
    assert.equal(textOf(r), "hi");
    assert.deepEqual(r.meta, { demo_echo: true });
    assert.ok(!("_meta" in r), "no result-level _meta on the wire");
    assert.notEqual(r.isError, true);
  });

  void test("structuredContent passes through", async () => {
    const r = await fx.call("demo__add", { a: 2, b: 3 });
    assert.deepEqual(r.structuredContent, { sum: 5 });
  });

  void test("a failing tool is an isError CallToolResult", async () => {
    const r = await fx.call("demo__fail", { message: "boom" });
    assert.equal(r.isError, true);
    assert.equal(textOf(r), "boom");
  });

  void test("invalid arguments are an isError CallToolResult", async () => {
    const r = await fx.call("demo__add", { a: "x" });
    assert.equal(r.isError, true);
  });

  void test("an unknown tool is an isError result with error_code 4001", async () => {
    for (const name of ["demo__nope", "nope", "other__echo", "demo"]) {
      const r = await fx.call(name);
      assert.equal(r.isError, true);
      assert.equal(r.meta?.error_code, 4001);
      assert.match(textOf(r), /Tool not found/);
    }
  });
});
