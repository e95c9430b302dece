/**
 * A configured Streamable HTTP MCP server (`{"url": ...}` in the MCP config): the demo server in
 * `--http` mode on a real port; its tools are listed and called, and its binary output goes
 * through the same sideband.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { after, before, test } from "node:test";
import { encodePng } from "../../../computer/tools/png.ts";
import {
  DEMO_SERVER,
  REPO_ROOT,
  sidebandOf,
  textOf,
  toolFixture,
  type ToolFixture,
} from "../../support/tools-harness.ts";

let child: ChildProcess;
let fx: ToolFixture;

before(async () => {
  child = spawn(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", DEMO_SERVER, "--http", "0"],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`demo server exited (${code})`)));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  fx = await toolFixture({ servers: { web: { url: `http://127.0.0.1:${port}/mcp` } } });
});
after(async () => {
  await fx?.close();
  const exited = once(child, "exit");
  child.kill();
  await exited;
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
