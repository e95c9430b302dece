/**
 * A real stack for Agent SDK end-to-end tests: the real Server (token auth, port 0), a skill home
 * on disk, and a Computer either in-process (`startComputer`) or as its own process (the shipped
 * `a2c-computer`, scripts/launch/, so a test can kill and restart it); and the Agent CLI.
 */
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { runAgent, startComputerProcess } from "../../scripts/launch/roles.ts";
import type { ServerOptions } from "../../server/server.ts";
import { ServerHarness, TEST_TOKEN } from "./server-harness.ts";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const E2E_OFFICE = "e2e-office";

export interface AgentStack {
  harness: ServerHarness;
  url: string;
  token: string;
  office: string;
  /** Temp dir holding the skill home (`home/`) and state dirs. */
  dir: string;
  home: string;
  close(): Promise<void>;
}

/** A user skill `<home>/user/<name>/` with SKILL.md and extra files. */
export async function writeSkill(
  home: string,
  name: string,
  body: string,
  files: Record<string, Buffer | string> = {},
): Promise<string> {
  const root = join(home, "user", name);
  await mkdir(root, { recursive: true, mode: 0o700 });
  await writeFile(
    join(root, "SKILL.md"),
    `---\nname: ${name}\ndescription: test skill ${name}\n---\n${body}`,
  );
  for (const [rel, content] of Object.entries(files)) {
    const p = join(root, rel);
    await mkdir(join(p, ".."), { recursive: true });
    await writeFile(p, content);
  }
  return root;
}

/**
 * Writes `size` bytes to `path`: a random block of an odd length repeated, so chunk boundaries
 * never line up with the period (a misplaced chunk changes the sha256) and a 256 MiB file costs
 * one small random draw. Returns the sha256 of what was written.
 */
export async function writeRandomFile(path: string, size: number): Promise<string> {
  await mkdir(join(path, ".."), { recursive: true });
  const block = randomBytes((4 << 20) + 4099);
  const hash = createHash("sha256");
  const fh = await open(path, "w");
  try {
    for (let off = 0; off < size;) {
      const n = Math.min(block.length, size - off);
      const piece = block.subarray(0, n);
      hash.update(piece);
      await fh.write(piece, 0, n, off);
      off += n;
    }
  } finally {
    await fh.close();
  }
  return hash.digest("hex");
}

/** `token`: the one token the Server accepts (default TEST_TOKEN); `server`: more of its options. */
export async function startAgentStack(
  token = TEST_TOKEN,
  server: ServerOptions = {},
): Promise<AgentStack> {
  const dir = await mkdtemp(join(tmpdir(), "agent-e2e-"));
  const home = join(dir, "home");
  await mkdir(home, { recursive: true, mode: 0o700 });
  const harness = await ServerHarness.start({ ...server, tokens: [token] });
  return {
    harness,
    url: harness.url,
    token,
    office: E2E_OFFICE,
    dir,
    home,
    async close() {
      await harness.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An in-process Computer serving the stack's skill home (and MCP servers when given). */
export async function inProcessComputer(
  stack: AgentStack,
  name: string,
  extra: {
    mcpConfig?: string;
    inlineBudget?: number;
    maxSize?: number;
    /** Where uploads land; unset: every upload is refused `forbidden`. */
    landingRoot?: string;
    upload?: { idleTimeoutMs?: number; maxConcurrent?: number; maxBytes?: number };
  } = {},
): Promise<RunningComputer> {
  return startComputer({
    server: stack.url,
    office: stack.office,
    name,
    token: stack.token,
    skills: stack.home,
    stateDir: join(stack.dir, `state-${name}`),
    workers: 0,
    maxSize: 1024 * 1024 * 1024,
    startTimeoutMs: 30_000,
    ...extra,
  });
}

/**
 * A Computer as its own process (`a2c-computer`); kill it with `child.kill("SIGKILL")`. `args`:
 * more of its flags (e.g. `--landing-root DIR`).
 */
export function spawnComputer(stack: AgentStack, name: string, args: string[] = []): ChildProcess {
  return startComputerProcess(
    {
      server: stack.url,
      office: stack.office,
      name,
      token: stack.token,
      skills: stack.home,
      stateDir: join(stack.dir, `state-${name}`),
      extra: ["--workers", "0", "--max-size", String(1024 * 1024 * 1024), ...args],
    },
    { env: { A2C_LOG_LEVEL: process.env.A2C_LOG_LEVEL ?? "error" } },
  ).child;
}

/** Resolves when the process has exited (or already had). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Runs the Agent CLI (`a2c-agent`) as a process; resolves with its exit code and output. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await runAgent(args, {
    env: { A2C_LOG_LEVEL: "silent", ...env },
  });
  return { code, stdout, stderr };
}
