/**
 * What every role writes to stderr, from real processes: by default JSON lines that all carry
 * `role`, `name`, `pid` and `hostname`; with `A2C_LOG_FORMAT=pretty` (what a TTY gets by
 * default) readable lines from pino-pretty. The Server and the Computer are their shipped bins;
 * the Agent is a process logging through the CLI's logger (the built `agent/dist/log.js`).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { launch, type LaunchedProcess } from "../../scripts/launch/process.ts";
import { REPO_ROOT, startRole } from "../../scripts/launch/roles.ts";
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
  start(env: Record<string, string>): LaunchedProcess;
  /** The message of a line every run writes. */
  msg: string;
}

const roles = (): Role[] => [
  {
    role: "server",
    name: "a2c-server",
    start: (env) =>
      startRole("server", { args: ["--port", "0", "--token", TEST_TOKEN], env: info(env) }),
    msg: "server listening",
  },
  {
    role: "computer",
    name: "pc-logs",
    start: (env) =>
      startRole("computer", {
        args: [
          ...["--server", h.url, "--office", "logs", "--name", "pc-logs", "--token", TEST_TOKEN],
          ...["--state-dir", join(dir, "state"), "--workers", "0"],
        ],
        env: info(env),
      }),
    msg: "joined office",
  },
  {
    role: "agent",
    name: "cli-logs",
    start: (env) =>
      launch({
        name: "agent logger",
        command: process.execPath,
        args: [
          "--input-type=module",
          "-e",
          'const m = await import("./agent/dist/log.js"); m.setLogName("cli-logs"); m.log.warn("agent says hello");',
        ],
        cwd: REPO_ROOT,
        env: { ...process.env, ...info(env) },
      }),
    msg: "agent says hello",
  },
];

const info = (env: Record<string, string>): Record<string, string> => ({
  A2C_LOG_LEVEL: "info",
  ...env,
});

/** Runs `role` until a stderr line contains its message, then stops it; resolves with its stderr. */
async function stderrUntil(
  role: Role,
  env: Record<string, string>,
): Promise<{ pid: number; stderr: string }> {
  const p = role.start(env);
  try {
    await p.waitFor(new RegExp(role.msg), 60_000);
  } finally {
    await p.stop("SIGTERM");
  }
  return { pid: p.pid, stderr: p.stderr() };
}

for (const r of ["server", "computer", "agent"]) {
  void test(`${r}: JSON lines on stderr, each with role, name, pid and hostname`, async () => {
    const role = roles().find((x) => x.role === r)!;
    const { pid, stderr } = await stderrUntil(role, { A2C_LOG_FORMAT: "json" });
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
    const { pid, stderr } = await stderrUntil(role, { A2C_LOG_FORMAT: "pretty" });
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
