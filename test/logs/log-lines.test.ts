/**
 * What every role writes to stderr, from real processes: by default JSON lines that all carry
 * `role`, `name`, `pid` and `hostname`; with `A2C_LOG_FORMAT=pretty` (what a TTY gets by
 * default) readable lines from pino-pretty. The Server and the
 * Computer are their `main.ts`; the Agent is a process logging through the SDK's logger.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { REPO_ROOT } from "../support/agent-stack.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

let h: ServerHarness;
let dir: string;

before(async () => {
  h = await ServerHarness.start();
  dir = await mkdtemp(join(tmpdir(), "log-lines-"));
});
after(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});

interface Role {
  role: string;
  name: string;
  args: string[];
  /** The message of a line every run writes. */
  msg: string;
}

const roles = (): Role[] => [
  {
    role: "server",
    name: "a2c-server",
    args: ["server/main.ts", "--port", "0", "--token", TEST_TOKEN],
    msg: "server listening",
  },
  {
    role: "computer",
    name: "pc-logs",
    args: [
      ...["computer/main.ts", "--server", h.url, "--office", "logs", "--name", "pc-logs"],
      ...["--token", TEST_TOKEN, "--state-dir", join(dir, "state"), "--workers", "0"],
    ],
    msg: "joined office",
  },
  {
    role: "agent",
    name: "cli-logs",
    args: [
      "--input-type=module",
      "-e",
      'const m = await import("./agent/log.ts"); m.setLogName("cli-logs"); m.log.warn("agent says hello");',
    ],
    msg: "agent says hello",
  },
];

/** Runs `args` until a stderr line contains `msg`, then stops it; resolves with its stderr. */
function stderrUntil(
  args: string[],
  msg: string,
  env: Record<string, string>,
): Promise<{ pid: number; stderr: string }> {
  const child = spawn(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", ...args],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, A2C_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      if (stderr.includes(msg) && stderr.endsWith("\n")) child.kill("SIGTERM");
    });
    child.on("error", reject);
    child.on("close", () => {
      if (stderr.includes(msg)) resolve({ pid: child.pid!, stderr });
      else reject(new Error(`no '${msg}' in:\n${stderr}`));
    });
  });
}

for (const r of ["server", "computer", "agent"]) {
  void test(`${r}: JSON lines on stderr, each with role, name, pid and hostname`, async () => {
    const role = roles().find((x) => x.role === r)!;
    const { pid, stderr } = await stderrUntil(role.args, role.msg, { A2C_LOG_FORMAT: "json" });
    const lines = stderr.trimEnd().split("\n");
    for (const line of lines) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      assert.deepEqual(
        { role: entry.role, name: entry.name, pid: entry.pid, hostname: entry.hostname },
        { role: role.role, name: role.name, pid, hostname: hostname() },
        line,
      );
    }
    assert.ok(lines.some((l) => (JSON.parse(l) as { msg?: string }).msg === role.msg));
  });

  void test(`${r}: A2C_LOG_FORMAT=pretty prints readable lines`, async () => {
    const role = roles().find((x) => x.role === r)!;
    const { pid, stderr } = await stderrUntil(role.args, role.msg, { A2C_LOG_FORMAT: "pretty" });
    // pino-pretty: `[time] LEVEL (name/pid): message`, the other fields indented below (it
    // leaves out the hostname: a person at a terminal knows it).
    const heading = new RegExp(
      `^\\[[\\d:.]+\\] (INFO|WARN) \\(${role.name}/${pid}\\): ${role.msg}\n    role: "${role.role}"$`,
      "m",
    );
    assert.match(stderr, heading);
    assert.doesNotMatch(stderr, /^\{/m, "no JSON line");
  });
}
