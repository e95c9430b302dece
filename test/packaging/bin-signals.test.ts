/**
 * SIGTERM and SIGINT to each installed bin (the packed packages in a fresh project): a2c-server
 * and a2c-computer stop cleanly with exit 0, a2c-agent aborts its download with 128 + the
 * signal's number and leaves no file but its partial one (kept for `-c`, D86), and no
 * process of theirs is left (the Computer's MCP server child included).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { watch } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/index.ts";
import { groupAlive } from "../../scripts/launch/process.ts";
import { writeRandomFile, writeSkill } from "../support/agent-stack.ts";
import { Bins, packedProject, stopWith } from "../support/packaging.ts";
import { standaloneDemoMcpServer } from "../../scripts/demo/mcp-command.ts";

const SIGNALS = ["SIGTERM", "SIGINT"] as const;

let root: string;
let project: string;
let home: string;
let mcpConfig: string;
const token = randomBytes(16).toString("hex");

before(async () => {
  root = await mkdtemp(join(tmpdir(), "a2c-bin-signals-"));
  ({ project } = await packedProject(root));
  home = join(root, "home");
  await writeSkill(home, "demo", "# Demo\n");
  await writeRandomFile(join(home, "user/demo/assets/blob.bin"), 8 * 1024 * 1024);
  mcpConfig = join(root, "mcp.json");
  // The demo MCP server ships in no package: one self-contained file, outside the repo.
  const demo = join(root, "mcp", "demo-server.mjs");
  await standaloneDemoMcpServer(demo);
  await writeFile(
    mcpConfig,
    JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: [demo] } } }),
  );
});

after(() => rm(root, { recursive: true, force: true }));

/** Pids of process group `pgid` (Linux /proc). */
async function groupMembers(pgid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // Fields after the parenthesised command: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid) pids.push(Number(entry));
  }
  return pids;
}

async function computerJoined(url: string): Promise<void> {
  const agent = new AgentClient({ url, token });
  try {
    await agent.connect();
    await agent.joinOffice("office-1");
    await agent.waitForComputer("pc-1", { timeoutMs: 60_000 });
    // Tools listed: the Computer's MCP server child is up.
    assert.ok((await agent.getTools("pc-1")).some((t) => t.name === "demo__png"));
  } finally {
    await agent.close();
  }
}

for (const signal of SIGNALS) {
  void test(`${signal}: a2c-server and a2c-computer exit 0 and leave no process`, async (t) => {
    const logs = join(root, `logs-${signal}`);
    await mkdir(logs);
    const bins = new Bins(project, logs);
    t.after(() => bins.set.stopAll());
    const server = await bins.server(token);
    const computer = bins.start("a2c-computer", [
      ...["--server", server.url, "--office", "office-1", "--name", "pc-1", "--token", token],
      ...["--skills", home, "--mcp-config", mcpConfig, "--state-dir", join(root, "state")],
    ]);
    await computerJoined(server.url);
    assert.ok((await groupMembers(computer.pid)).length >= 2, "the MCP server runs in the group");

    assert.equal(await stopWith(computer, signal), 0, "a2c-computer exit code");
    assert.equal(await stopWith(server.child, signal), 0, "a2c-server exit code");
  });

  void test(`${signal}: a2c-agent aborts its download, exits 128 + signo, no file but its partial one`, async (t) => {
    const logs = join(root, `logs-agent-${signal}`);
    const out = join(root, `out-${signal}`);
    await Promise.all([mkdir(logs), mkdir(out)]);
    const bins = new Bins(project, logs);
    t.after(async () => {
      // A paused Computer would only die of SIGKILL: let it take its SIGTERM.
      for (const c of bins.set.children) if (groupAlive(c.pid)) process.kill(-c.pid, "SIGCONT");
      await bins.set.stopAll();
    });
    const server = await bins.server(token);
    const computer = bins.start("a2c-computer", [
      ...["--server", server.url, "--office", "office-1", "--name", "pc-1", "--token", token],
      ...["--skills", home, "--state-dir", join(root, `state-agent-${signal}`)],
    ]);
    const probe = new AgentClient({ url: server.url, token });
    await probe.connect();
    await probe.joinOffice("office-1");
    await probe.waitForComputer("pc-1", { timeoutMs: 60_000 });
    const handle = (await probe.getSkill("pc-1", "demo", "assets/blob.bin")).blob_handle!;
    await probe.close(); // one Agent per office: the CLI takes the seat

    // The partial file appears once the pull has begun; then the Computer is paused, so the
    // download cannot finish before the signal, whatever the machine's speed.
    const started = new Promise<void>((resolve) => {
      const watcher = watch(out, (_event, name) => {
        if (name === "blob.bin.a2c-part") {
          watcher.close();
          resolve();
        }
      });
    });
    const cli = bins.start("a2c-agent", [
      ...["--server", server.url, "--office", "office-1", `--token=${token}`],
      ...["blob", "pc-1", handle, "-o", join(out, "blob.bin"), "--window", "1"],
      ...["--chunk-bytes", "16384"],
    ]);
    await Promise.race([
      started,
      cli.exited.then((code) => {
        throw new Error(
          `a2c-agent exited ${code} before its pull began:\n${cli.tail().join("\n")}`,
        );
      }),
    ]);
    process.kill(-computer.pid, "SIGSTOP");

    assert.equal(await stopWith(cli, signal), signal === "SIGINT" ? 130 : 143);
    // What was written is kept for -c (D85); nothing was once no byte was.
    const left = await readdir(out);
    assert.ok(
      left.length === 0 || (left.length === 1 && left[0] === "blob.bin.a2c-part"),
      `left: ${left.join(", ")}`,
    );
  });
}
