/**
 * A configured Streamable HTTP MCP server (`{"url": ...}` in the MCP config): the demo server in
 * `--http` mode on a real port; its tools are listed and called, and its binary output goes
 * through the same sideband.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DEMO_MCP_SCRIPT } from "../../../scripts/demo/mcp-command.ts";
import { encodePng } from "../../../scripts/demo/png.ts";
import type { LaunchedProcess } from "../../../scripts/launch/process.ts";
import { startScript } from "../../../scripts/launch/roles.ts";
import { sidebandOf, textOf, toolFixture, type ToolFixture } from "../../support/tools-harness.ts";

let demo: LaunchedProcess | undefined;
let fx: ToolFixture;

before(async () => {
  demo = await startScript(DEMO_MCP_SCRIPT, { name: "demo MCP server", args: ["--http", "0"] });
  const port = Number((await demo.waitFor(/^listening (\d+)/))[1]);
  fx = await toolFixture({ servers: { web: { url: `http://127.0.0.1:${port}/mcp` } } });
});
after(async () => {
  await fx?.close();
  await demo?.stop();
});

void test("tools of an HTTP MCP server are listed and callable", async () => {
  assert.equal(fx.service.connection("web")?.state, "ready");
  assert.equal(textOf(await fx.call("web__echo", { text: "over http" })), "over http");
});

void test("binary output of an HTTP MCP server is sidebanded too", async () => {
  const r = await fx.call("web__png", { width: 200, height: 200, noise: true });
  const meta = sidebandOf(r, 1);
  const { bytes } = await fx.pull(meta.a2c_blob_handle);
  assert.ok(bytes.equals(encodePng({ width: 200, height: 200, noiseSeed: 200 * 7919 + 200 })));
});
