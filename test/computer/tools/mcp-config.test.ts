// @pure
/**
 * `--mcp-config FILE` parsing: both spellings of the server map, stdio and HTTP entries, disabled
 * entries dropped, and clear errors for bad bundle ids, bad shapes, bad JSON and missing files.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { loadMcpConfig, parseMcpConfig } from "../../../computer/tools/mcp-config.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-mcp-config-"));
after(() => rmSync(dir, { recursive: true, force: true }));

void test("stdio and HTTP servers keyed by bundle_id; disabled ones dropped", () => {
  const servers = parseMcpConfig({
    mcpServers: {
      demo: { command: "node", args: ["x.ts"], env: { A: "1" }, cwd: "/tmp" },
      "web-1": { url: "http://127.0.0.1:9/mcp", headers: { "x-api-key": "k" } },
      Off_2: { command: "node", disabled: true },
    },
  });
  assert.deepEqual(Object.keys(servers), ["demo", "web-1"]);
  assert.deepEqual(servers.demo, { command: "node", args: ["x.ts"], env: { A: "1" }, cwd: "/tmp" });
  assert.deepEqual(parseMcpConfig({ servers: { a: { command: "x" } } }), {
    a: { command: "x", args: [] },
  });
});

void test("bad configs are refused with a message naming the problem", () => {
  const bad: [unknown, RegExp][] = [
    [{ mcpServers: { a__b: { command: "x" } } }, /bundle_id/],
    [{ mcpServers: { "a.b": { command: "x" } } }, /bundle_id/],
    [{ mcpServers: { a: { command: "" } } }, /invalid MCP config/],
    [{ mcpServers: { a: { url: "not a url" } } }, /invalid MCP config/],
    [{ mcpServers: { a: { command: "x", typo: 1 } } }, /invalid MCP config/],
    [{ mcpServers: {}, servers: {} }, /exactly one/],
    [{}, /exactly one/],
    [[], /invalid MCP config/],
  ];
  for (const [raw, re] of bad) assert.throws(() => parseMcpConfig(raw), re, JSON.stringify(raw));
});

void test("file errors: missing file and invalid JSON", async () => {
  await assert.rejects(loadMcpConfig(join(dir, "nope.json")), /cannot read MCP config/);
  const broken = join(dir, "broken.json");
  writeFileSync(broken, "{ nope");
  await assert.rejects(loadMcpConfig(broken), /not valid JSON/);
  const good = join(dir, "good.json");
  writeFileSync(good, JSON.stringify({ mcpServers: { d: { command: "node" } } }));
  assert.deepEqual(await loadMcpConfig(good), { d: { command: "node", args: [] } });
});
