/**
 * The one way this repo starts a Server, a Computer or an Agent as a process — for `npm run
 * stack`, the bench, the tests and the soak: the shipped build (each package's `dist/`, its bin
 * on plain node with the node flags of the bin's own shebang, NODE_FLAGS), exactly as an
 * installed `a2c-server`, `a2c-computer` or `a2c-agent` runs. Scripts of this repo that host a role
 * in-process (a bench load process, a soak Agent, the stack's scripted Agent) are compiled to
 * JavaScript first (compile.ts) and import the same built packages. In-process, a test or a
 * script calls the packages' own API instead: `startServer`, `startComputer`, `new AgentClient`.
 *
 * `prefix` runs the process under another command (`ip netns exec NS` to place it in a network
 * namespace, `nice -n 10`, `chrt --idle 0`), `preload` imports scripts before the entry point
 * (instrumentation), `group` makes it a process-group leader so a stop reaches what it started.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { compileScript, REPO_ROOT } from "./compile.ts";
import { launch, type LaunchedProcess, type ProcessSpec } from "./process.ts";

export { REPO_ROOT };
export type Role = "server" | "computer" | "agent";

/** Each role's bin: what `npm install` links as `a2c-server`, `a2c-computer`, `a2c-agent`. */
export const ROLE_BINS: Record<Role, string> = {
  server: "server/dist/main.js",
  computer: "computer/dist/main.js",
  agent: "agent/dist/a2c-agent.js",
};

/**
 * The node flags of every role's bin (its shebang, `#!/usr/bin/env -S node FLAGS`; a test in
 * test/repo holds the two equal) and of every process the bench starts. A process moving big
 * binary chunks allocates ArrayBuffers (received frames) much faster than JS objects, and V8
 * counts that external memory against the old generation's limit. Dead chunks are freed by
 * scavenges, but when a full mark-compact comes first it also empties the young generation, so
 * no scavenge ever runs and every ~12 MB of chunks costs a mark-compact of the whole heap: a
 * stable state, as is its opposite (the same Server measured at 1.5–3.1 ms per 512 KiB chunk in
 * one, 0.5–0.7 in the other, depending on what it had served before). Hence: the young
 * generation capped at 4 MB (scavenges come often) and the old generation's growing factor
 * pinned at 4, the top of V8's own dynamic range (a mark-compact only after the heap grew 3× its
 * live size, far beyond what dies between two scavenges). docs/configuration.md ("Process
 * tuning") has the numbers.
 */
export const NODE_FLAGS: readonly string[] = [
  "--max-semi-space-size=4",
  "--heap-growing-percent=300",
];

function builtBin(role: Role, root = REPO_ROOT): string {
  const bin = join(root, ROLE_BINS[role]);
  if (!existsSync(bin)) {
    throw new Error(`${ROLE_BINS[role]} is missing: run \`npm run build\` (npm test builds first)`);
  }
  return bin;
}

/**
 * `[node, ...flags, bin]`: the command line of a role's bin, to run as is or to print; `root`
 * another built checkout (a baseline measured beside this one).
 */
export function roleCommand(role: Role, root = REPO_ROOT): string[] {
  return [process.execPath, ...NODE_FLAGS, builtBin(role, root)];
}

export interface StartSpec extends Omit<ProcessSpec, "name" | "command" | "args" | "env"> {
  name?: string;
  args?: string[];
  /**
   * Variables for the child, over this process's environment (`inheritEnv`); a variable set to
   * `undefined` is removed.
   */
  env?: NodeJS.ProcessEnv;
  /** Start from this environment instead of this process's. */
  inheritEnv?: NodeJS.ProcessEnv;
  /** For a role: the built checkout whose bin runs (default this one). */
  root?: string;
  /** Node flags before the entry point (default: NODE_FLAGS for a role, none for a script). */
  nodeFlags?: readonly string[];
  /**
   * Modules imported before the entry point: JavaScript files, e.g. a script of this repo
   * compiled with `compileScript` (instrumentation the soak loads into every process).
   */
  preload?: string[];
}

function environment(spec: StartSpec): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...(spec.inheritEnv ?? process.env) };
  for (const [k, v] of Object.entries(spec.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

function preloadFlags(preload: string[] = []): string[] {
  return preload.flatMap((f) => ["--import", pathToFileURL(f).href]);
}

/** A role's shipped bin as a process. */
export function startRole(role: Role, spec: StartSpec = {}): LaunchedProcess {
  const [node, ...rest] = roleCommand(role, spec.root);
  const bin = rest.pop()!;
  const flags = spec.nodeFlags ?? rest;
  return launch({
    ...spec,
    name: spec.name ?? role,
    command: node!,
    args: [...flags, ...preloadFlags(spec.preload), bin, ...(spec.args ?? [])],
    cwd: spec.cwd ?? REPO_ROOT,
    env: environment(spec),
  });
}

/** A TypeScript script of this repo (a host of a role, a tool), compiled, on plain node. */
export async function startScript(script: string, spec: StartSpec = {}): Promise<LaunchedProcess> {
  const entry = await compileScript(script);
  return launch({
    ...spec,
    name: spec.name ?? script,
    command: process.execPath,
    args: [...(spec.nodeFlags ?? []), ...preloadFlags(spec.preload), entry, ...(spec.args ?? [])],
    cwd: spec.cwd ?? REPO_ROOT,
    env: environment(spec),
  });
}

export interface ServerProcess {
  proc: LaunchedProcess;
  /** The URL of its `listening on URL` line. */
  url: string;
}

/**
 * `a2c-server` with `args` (`--port 0` unless a port is given), resolved once it printed its
 * one stdout line, `listening on URL`.
 */
export async function startServerProcess(
  spec: StartSpec & { timeoutMs?: number } = {},
): Promise<ServerProcess> {
  const args = spec.args ?? [];
  const hasPort = args.includes("--port") || spec.env?.A2C_PORT !== undefined;
  const proc = startRole("server", { ...spec, args: hasPort ? args : ["--port", "0", ...args] });
  try {
    const m = await proc.waitFor(/^listening on (http:\/\/\S+)/, spec.timeoutMs ?? 60_000);
    return { proc, url: m[1]! };
  } catch (err) {
    await proc.kill();
    throw err;
  }
}

/** The options of `a2c-computer` that every start names. */
export interface ComputerArgs {
  server: string;
  office: string;
  name: string;
  token: string;
  skills?: string;
  stateDir?: string;
  /** Any further flags (`--workers 0`, `--mcp-config FILE`, …). */
  extra?: string[];
}

export function computerArgs(a: ComputerArgs): string[] {
  return [
    ...["--server", a.server, "--office", a.office, "--name", a.name, "--token", a.token],
    ...(a.skills !== undefined ? ["--skills", a.skills] : []),
    ...(a.stateDir !== undefined ? ["--state-dir", a.stateDir] : []),
    ...(a.extra ?? []),
  ];
}

/**
 * `a2c-computer` as a process. It logs `joined office` (at info: set `A2C_LOG_LEVEL` so) once in
 * its office: `proc.waitFor(JOINED)`.
 */
export function startComputerProcess(
  computer: ComputerArgs,
  spec: StartSpec = {},
): LaunchedProcess {
  return startRole("computer", {
    name: computer.name,
    ...spec,
    args: [...computerArgs(computer), ...(spec.args ?? [])],
  });
}

/** The line a Computer logs (at info) once it joined its office. */
export const JOINED = /joined office/;

export interface AgentRun {
  code: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `a2c-agent ARGS` to its end: exit status and everything it wrote. */
export async function runAgent(args: string[], spec: StartSpec = {}): Promise<AgentRun> {
  const proc = startRole("agent", { keepBytes: 64 * 1024 * 1024, ...spec, args });
  const exit = await proc.exited;
  return { code: exit.status, signal: exit.signal, stdout: proc.stdout(), stderr: proc.stderr() };
}
