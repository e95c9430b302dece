/**
 * An MCP server killed mid-call: the call answers an isError CallToolResult, the server is
 * restarted (new process), its tools work again, and nothing crashes. Also: tools/list_changed
 * from a server becomes `server:update_tool_list`, only while attached.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GetToolsRetSchema } from "../../../protocol/index.ts";
import {
  nextReqId,
  quietLog,
  textOf,
  toolFixture,
  type ToolFixture,
} from "../../support/tools-harness.ts";

let fx: ToolFixture;
before(async () => {
  fx = await toolFixture({ restartBaseMs: 20 });
});
after(() => fx.close());

async function toolNames(): Promise<string[]> {
  const ret = await fx.service.handlers["client:get_tools"]!(
    { agent: "a", req_id: nextReqId(), computer: fx.config.name },
    { signal: new AbortController().signal, log: quietLog },
  );
  return GetToolsRetSchema.parse(ret).tools.map((t) => t.name);
}

/** Waits (by polling the connection state, not by sleeping a fixed time) for `pred`. */
async function until(pred: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await pred())) await new Promise((r) => setImmediate(r));
}

void test("a server killed mid-call gives isError, is restarted and serves again", async () => {
  const conn = fx.service.connection("demo");
  assert.ok(conn);
  const pid = Number(textOf(await fx.call("demo__pid")));
  assert.equal(conn.pid, pid);
  const pending = fx.call("demo__slow", { ms: 60_000 }, 120);
  await fx.call("demo__echo", { text: "in flight" });
  process.kill(pid, "SIGKILL");
  const r = await pending;
  assert.equal(r.isError, true);
  assert.match(textOf(r), /demo/);
  // While it restarts, its tools stay listed and calls fail with a clear text.
  if (conn.state !== "ready") {
    const down = await fx.call("demo__echo", { text: "x" });
    assert.equal(down.isError, true);
    assert.match(textOf(down), /not running|restart|closed/i);
  }
  await until(() => conn.state === "ready");
  const pid2 = Number(textOf(await fx.call("demo__pid")));
  assert.notEqual(pid2, pid);
  assert.equal(textOf(await fx.call("demo__echo", { text: "back" })), "back");
  assert.ok((await toolNames()).includes("demo__echo"));
});

void test("tools/list_changed becomes server:update_tool_list while attached", async () => {
  fx.notifications.length = 0;
  assert.ok(!(await toolNames()).includes("demo__extra"));
  await fx.call("demo__toggle_extra");
  await until(async () => (await toolNames()).includes("demo__extra"));
  await until(() => fx.notifications.includes("server:update_tool_list"));
  assert.equal(textOf(await fx.call("demo__extra")), "extra");

  fx.service.detach?.();
  fx.notifications.length = 0;
  await fx.call("demo__toggle_extra");
  await until(async () => !(await toolNames()).includes("demo__extra"));
  assert.deepEqual(fx.notifications, [], "no notification while detached");
  const r = await fx.call("demo__extra");
  assert.equal(r.meta?.error_code, 4001);
  fx.service.attach?.((e) => fx.notifications.push(e));
});

void test("a server that cannot start is retried and never crashes the service", async () => {
  const broken = await toolFixture({
    servers: { broken: { command: "/nonexistent/mcp-server", args: [] } },
    restartBaseMs: 10,
  });
  try {
    const conn = broken.service.connection("broken");
    assert.ok(conn);
    assert.notEqual(conn.state, "ready");
    const r = await broken.call("broken__anything");
    assert.equal(r.isError, true);
  } finally {
    await broken.close();
  }
});
