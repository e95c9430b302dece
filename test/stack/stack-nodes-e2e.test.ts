/**
 * `npm run stack -- --nodes 2` end to end (8 MiB big file, as the one-node e2e): a real
 * redis-server and two Server nodes on it, every scenario passes with each Agent reaching its
 * Computer through the other node, and Ctrl-C on the kept stack leaves no process behind (Redis
 * included: its port no longer answers) and no temp dir.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { test } from "node:test";
import { SCENARIOS } from "../../scripts/stack/plan.ts";
import type { StackReport } from "../../scripts/stack/report.ts";
import { alive, cmdline, descendants, startStack } from "../support/stack-harness.ts";

/** True when something accepts a TCP connection on loopback `port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: "127.0.0.1", port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });
}

void test("--nodes 2: every scenario passes across two nodes on one Redis; Ctrl-C leaves nothing", async () => {
  const stack = startStack(
    ["--json", "--keep", "--nodes", "2", "--agents", "2", "--big-mib", "8"],
    {
      A2C_STACK_DEADLINE_MS: "160000",
    },
  );
  let stopped = false;
  // pid → command line, sampled during the whole run (the processes are gone at the end).
  const seen = new Map<number, string>();
  const sample = (): void => {
    // Keep the latest command line: a child sampled between fork and exec still shows the
    // parent's command line.
    for (const pid of descendants(stack.child.pid!)) {
      const cmd = cmdline(pid);
      if (cmd) seen.set(pid, cmd);
    }
  };
  const sampler = setInterval(sample, 200);
  try {
    const [, tmp] = await stack.waitFor(/^a2c stack: temp dir (\S+)/);
    await stack.waitFor(/demo manifest\s+\S+/); // --keep: the report is complete

    const report = JSON.parse(stack.stdout()) as StackReport;
    const failed = report.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.detail}`);
    assert.deepEqual(failed, [], "failed scenarios");
    assert.deepEqual(report.missing, [], "scenarios without a result");
    assert.deepEqual(
      report.results.map((r) => r.id).sort(),
      SCENARIOS.map((s) => s.id).sort(),
      "one result per scenario",
    );
    for (const r of report.results.filter((x) => x.verified !== null)) {
      assert.equal(r.verified, true, `${r.id} verified`);
    }
    assert.equal(report.ok, true);

    // Two nodes on the stack's own Redis.
    assert.deepEqual(
      report.nodes.map((n) => n.name),
      ["server-a", "server-b"],
    );
    assert.ok(report.redis, "a redis-server was started");
    const redisPort = Number(new URL(report.redis.url).port);
    assert.equal(await listening(redisPort), true, "Redis serves while the stack is kept");
    sample();
    assert.match(seen.get(report.redis.pid) ?? "", /redis-server/);
    for (const n of report.nodes) {
      const cmd = seen.get(n.pid) ?? "";
      assert.match(cmd, /server\/dist\/main\.js/);
      assert.ok(cmd.includes(`--redis ${report.redis.url}`), `${n.name} uses the Redis: ${cmd}`);
    }

    // Each Agent reaches a Computer of its office through the other node.
    for (const a of report.agents) {
      const nodes = report.computers.filter((c) => c.office === a.office).map((c) => c.node);
      assert.ok(
        nodes.some((n) => n !== a.node),
        `${a.name} on ${a.node}, computers on ${nodes.join(",")}`,
      );
    }
    assert.notEqual(report.agents[0]!.node, report.agents[1]!.node, "Agents on both nodes");
    const probe = report.results.find((r) => r.id === "cross-office-probe")!;
    const agentNode = report.agents.find((a) => a.name === probe.agent)!.node;
    const other = report.nodes.find((n) => n.name !== agentNode)!;
    assert.ok(probe.detail.includes(`2nd Agent refused (via ${other.url})`), probe.detail);

    const started = [
      report.redis.pid,
      ...report.nodes.map((n) => n.pid),
      ...report.computers.map((c) => c.pid),
      ...report.agents.map((a) => a.pid),
    ];
    for (const pid of started) assert.ok(seen.has(pid), `pid ${pid} was a child of the stack`);

    stack.child.kill("SIGINT");
    const { code } = await stack.exited;
    stopped = true;
    assert.equal(code, 0, "a kept run that passed exits 0 on Ctrl-C");
    const left = [...seen.keys()].filter(alive);
    assert.deepEqual(left, [], `left behind:\n${left.map((p) => seen.get(p)).join("\n")}`);
    assert.equal(await listening(redisPort), false, "Redis port closed");
    assert.equal(existsSync(tmp!), false, "temp dir (Redis dir included) removed");
  } finally {
    clearInterval(sampler);
    if (!stopped) {
      stack.child.kill("SIGINT");
      await stack.exited;
    }
  }
});
