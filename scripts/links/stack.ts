/**
 * Our stack on the link harness: the Server, Computers and Agents as processes in their hosts'
 * namespaces, run from a build's shipped files (`server/dist`, `computer/dist` with plain node and
 * their shebang's flags; the Agent SDK of `agent/dist` inside `agent-driver.ts`), so a case can run
 * today's build and another checkout's (a baseline) on the same links, one after the other.
 * Office i holds computer-i and agent-i; every Computer serves the same skill home and runs the
 * trivial MCP server of `ping-mcp.ts` (tool `links__ping`).
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Child } from "../launch/ipc.ts";
import { firstLine, type ManagedChild } from "../stack/children.ts";
import type {
  ConnectArgs,
  DownloadArgs,
  DownloadResult,
  HandleArgs,
  HandleInfo,
  ProbeArgs,
  ProbeSample,
  UploadArgs,
  UploadRunResult,
} from "./agent-driver.ts";
import type { GaugeSampling, SinkResult } from "./ns-tool.ts";
import type { Host, Links } from "./topology.ts";

/** This checkout. */
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A checkout whose roles are run: its `dist` files and its `node_modules`. */
export interface Build {
  root: string;
  /** How the report names it (`ours`, `baseline`). */
  label: string;
}

export const OUR_BUILD: Build = { root: REPO_ROOT, label: "ours" };

const ENTRY = {
  server: "server/dist/main.js",
  computer: "computer/dist/main.js",
  agent: "agent/dist/index.js",
  cli: "agent/dist/a2c-agent.js",
} as const;

const PACKAGES = ["protocol", "agent", "server", "computer"] as const;

/** The newest modification time of the TypeScript sources under `dir` (dist and deps aside). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "dist" || e.name === "node_modules") continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts"))
      newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * What keeps `root` from being run as a build, or null: a missing entry file or `node_modules`,
 * or a package whose sources changed after its last build (the run would measure older code).
 */
export function buildProblem(root: string): string | null {
  const missing = Object.values(ENTRY).filter((f) => !existsSync(join(root, f)));
  if (missing.length > 0) {
    return `${root} is not built (missing ${missing.join(", ")}): run npm run build there`;
  }
  if (!existsSync(join(root, "node_modules", "socket.io"))) {
    return `${root} has no node_modules: run npm ci there`;
  }
  for (const pkg of PACKAGES) {
    const info = join(root, pkg, "dist", ".tsbuildinfo");
    if (!existsSync(info) || statSync(info).mtimeMs < newestSource(join(root, pkg))) {
      return `${join(root, pkg)} changed after its last build: run npm run build there`;
    }
  }
  return null;
}

/** The node flags of an entry file's `#!/usr/bin/env -S node …` line (none without one). */
export function shebangFlags(file: string): string[] {
  const first = readFileSync(file, "utf8").split("\n", 1)[0] ?? "";
  const m = /^#!.*\bnode((?:\s+-\S+)*)\s*$/.exec(first);
  return m?.[1] ? m[1].trim().split(/\s+/) : [];
}

export const PING_TOOL = "links__ping";
const SERVER_PORT = 7100;
const TSX = ["--conditions=@a2c-smcp/source", "--import", "tsx"];

/** Waits for a child's `ready` message (bench/lib/ipc.ts `serve`), or its exit. */
function ready(child: ManagedChild, timeoutMs: number): Promise<Child> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new Error(`${child.name} not ready in ${timeoutMs} ms:\n  ${child.tail().join("\n  ")}`),
      );
    }, timeoutMs);
    const onMessage = (m: { kind?: string }): void => {
      if (m.kind !== "ready") return;
      clearTimeout(timer);
      child.process.off("message", onMessage);
      resolve(new Child(child.name, child.process));
    };
    child.process.on("message", onMessage);
    void child.exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(
          `${child.name} exited (${code}) before it was ready:\n  ${child.tail().join("\n  ")}`,
        ),
      );
    });
  });
}

/** The helper process of a namespace (ns-tool.ts). */
export class NsTool {
  constructor(readonly child: Child) {}
  fetch(url: string): Promise<string> {
    return this.child.call("fetch", { url });
  }
  gaugeStart(url: string, metric: string, intervalMs: number): Promise<number> {
    return this.child.call("gauge-start", { url, metric, intervalMs });
  }
  gaugeStop(id: number): Promise<GaugeSampling> {
    return this.child.call("gauge-stop", id);
  }
  tcpSource(port: number, bytes: number): Promise<number> {
    return this.child.call("tcp-source", { port, bytes });
  }
  tcpSink(host: string, port: number): Promise<SinkResult> {
    return this.child.call("tcp-sink", { host, port });
  }
  echoServer(port: number): Promise<number> {
    return this.child.call("echo-server", { port });
  }
  rtt(host: string, port: number, samples: number): Promise<number[]> {
    return this.child.call("rtt", { host, port, samples });
  }
}

export async function startNsTool(links: Links, host: Host): Promise<NsTool> {
  const child = links.spawn(host, {
    name: `tool-${host.name}`,
    command: process.execPath,
    args: [...TSX, join(REPO_ROOT, "scripts/links/ns-tool.ts")],
    cwd: REPO_ROOT,
    ipc: true,
  });
  return new NsTool(await ready(child, 60_000));
}

/** One Agent process (agent-driver.ts), typed. */
export class AgentDriver {
  constructor(
    readonly child: Child,
    readonly computer: string,
  ) {}
  handle(a: Omit<HandleArgs, "computer"> & { computer?: string }): Promise<HandleInfo> {
    return this.child.call("handle", { computer: this.computer, ...a });
  }
  download(a: Omit<DownloadArgs, "computer"> & { computer?: string }): Promise<DownloadResult> {
    return this.child.call("download", { computer: this.computer, ...a });
  }
  upload(a: Omit<UploadArgs, "computer"> & { computer?: string }): Promise<UploadRunResult> {
    return this.child.call("upload", { computer: this.computer, ...a });
  }
  probeStart(
    intervalMs: number,
    kinds: ProbeArgs["kinds"] = ["tool_call", "get_skills"],
  ): Promise<number> {
    return this.child.call("probe-start", {
      computer: this.computer,
      tool: PING_TOOL,
      kinds,
      intervalMs,
    });
  }
  probeStop(id: number): Promise<ProbeSample[]> {
    return this.child.call("probe-stop", id);
  }
  probeRun(
    perKind: number,
    kinds: ProbeArgs["kinds"] = ["tool_call", "get_skills"],
  ): Promise<ProbeSample[]> {
    return this.child.call("probe-run", {
      computer: this.computer,
      tool: PING_TOOL,
      kinds,
      perKind,
    });
  }
}

export interface StackOnLinksOptions {
  build?: Build;
  /** Skill home every Computer serves. */
  skills: string;
  /** Folder for the Computers' state (one subfolder each) and the MCP config. */
  workDir: string;
  /** Offices (computer-i with agent-i); default min(agents, computers). */
  offices?: number;
  /** Extra flags for the Server / the Computers. */
  serverArgs?: string[];
  computerArgs?: string[];
  /**
   * Every Computer's answers come this much later: it reaches the Server through `hold-relay.ts`
   * in its host, which holds what the Server sends. Default none.
   */
  computerHoldMs?: number;
}

export interface StackOnLinks {
  links: Links;
  build: Build;
  token: string;
  offices: string[];
  computerNames: string[];
  server: ManagedChild;
  computers: ManagedChild[];
  agents: AgentDriver[];
  /** ns-tool in the Server's namespace (its `/metrics` is reached from there). */
  serverTool: NsTool;
  metricsUrl: string;
  metrics(): Promise<string>;
  /** Stops every process of this stack (the links stay). */
  close(): Promise<void>;
}

/**
 * Starts the Server, the Computers and the Agents of `build` on `links` and returns once every
 * Agent is in its office and sees its Computer.
 */
export async function startStackOnLinks(
  links: Links,
  o: StackOnLinksOptions,
): Promise<StackOnLinks> {
  const build = o.build ?? OUR_BUILD;
  const problem = buildProblem(build.root);
  if (problem) throw new Error(problem);
  const offices = o.offices ?? Math.min(links.agents.length, links.computers.length);
  const token = `links-${randomUUID()}`;
  const run = randomUUID().slice(0, 8);
  const started: ManagedChild[] = [];
  const drivers: Child[] = [];
  let serverTool: Promise<NsTool> | undefined;
  const close = async (): Promise<void> => {
    await Promise.all(drivers.map((d) => d.close().catch(() => undefined)));
    await serverTool?.then((t) => t.child.close()).catch(() => undefined);
    for (const c of [...started].reverse()) {
      try {
        process.kill(-c.pid, "SIGTERM");
      } catch {
        // Already gone.
      }
    }
    const killer = setTimeout(() => {
      for (const c of started) {
        try {
          process.kill(-c.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
    }, 5000);
    await Promise.all(started.map((c) => c.exited));
    clearTimeout(killer);
  };
  try {
    const serverFile = join(build.root, ENTRY.server);
    const serverLines: string[] = [];
    const server = links.spawn(links.server, {
      name: `server-${build.label}`,
      command: process.execPath,
      args: [
        ...shebangFlags(serverFile),
        serverFile,
        ...["--host", "0.0.0.0", "--port", String(SERVER_PORT), "--token", token],
        ...(o.serverArgs ?? []),
      ],
      env: { A2C_LOG_LEVEL: "warn", A2C_LOG_FORMAT: "json" },
      cwd: build.root,
      onLine: (l) => serverLines.push(l),
    });
    started.push(server);
    serverTool = startNsTool(links, links.server);
    await firstLine(server, serverLines, /^listening on /, 60_000);
    const metricsUrl = `http://127.0.0.1:${SERVER_PORT}/metrics`;
    mkdirSync(o.workDir, { recursive: true });
    const mcpConfig = join(o.workDir, "mcp.json");
    writeFileSync(
      mcpConfig,
      JSON.stringify({
        mcpServers: {
          links: {
            command: process.execPath,
            args: [...TSX, join(REPO_ROOT, "scripts/links/ping-mcp.ts")],
            cwd: REPO_ROOT,
          },
        },
      }),
    );
    const officeNames = Array.from({ length: offices }, (_, i) => `links-${run}-office-${i}`);
    const computerNames = Array.from({ length: offices }, (_, i) => `computer-${i}`);
    const computerFile = join(build.root, ENTRY.computer);
    const serverAddress = `${links.server.addressForComputers}:${SERVER_PORT}`;
    const urls = await Promise.all(
      links.computers.slice(0, offices).map(async (host) => {
        if (o.computerHoldMs === undefined) return `http://${serverAddress}`;
        const lines: string[] = [];
        const relay = links.spawn(host, {
          name: `${host.name}-hold`,
          command: process.execPath,
          args: [
            ...TSX,
            join(REPO_ROOT, "scripts/links/hold-relay.ts"),
            ...["--to", serverAddress],
            ...["--hold-ms", String(o.computerHoldMs)],
          ],
          cwd: REPO_ROOT,
          onLine: (l) => lines.push(l),
        });
        started.push(relay);
        const port = (await firstLine(relay, lines, /^listening on \d+/, 60_000)).split(" ")[2];
        return `http://127.0.0.1:${port}`;
      }),
    );
    const computers = links.computers.slice(0, offices).map((host, i) => {
      const c = links.spawn(host, {
        name: `${host.name}-${build.label}`,
        command: process.execPath,
        args: [
          ...shebangFlags(computerFile),
          computerFile,
          ...["--server", urls[i]!],
          ...["--office", officeNames[i]!, "--name", computerNames[i]!, "--token", token],
          ...["--skills", o.skills, "--mcp-config", mcpConfig],
          ...["--state-dir", join(o.workDir, `state-${i}`), "--max-size", String(2 ** 32)],
          ...(o.computerArgs ?? []),
        ],
        env: { A2C_LOG_LEVEL: "warn", A2C_LOG_FORMAT: "json" },
        cwd: build.root,
      });
      started.push(c);
      return c;
    });
    const cliFile = join(build.root, ENTRY.cli);
    const agents = await Promise.all(
      links.agents.slice(0, offices).map(async (host, i) => {
        const c = links.spawn(host, {
          name: `${host.name}-${build.label}`,
          command: process.execPath,
          args: [
            ...shebangFlags(cliFile),
            ...TSX,
            join(REPO_ROOT, "scripts/links/agent-driver.ts"),
          ],
          cwd: REPO_ROOT,
          ipc: true,
        });
        started.push(c);
        const child = await ready(c, 60_000);
        drivers.push(child);
        await child.call("connect", {
          buildRoot: build.root,
          url: `http://${links.server.addressForAgents}:${SERVER_PORT}`,
          token,
          office: officeNames[i]!,
          name: `agent-${i}`,
          computers: [computerNames[i]!],
        } satisfies ConnectArgs);
        return new AgentDriver(child, computerNames[i]!);
      }),
    );
    // A Computer that died after its Agent saw it would fail the first case, not here.
    for (const c of computers) {
      const exited = await Promise.race([c.exited, Promise.resolve(null)]);
      if (exited !== null)
        throw new Error(`${c.name} exited (${exited}):\n  ${c.tail().join("\n  ")}`);
    }
    const tool = await serverTool;
    return {
      links,
      build,
      token,
      offices: officeNames,
      computerNames,
      server,
      computers,
      agents,
      serverTool: tool,
      metricsUrl,
      metrics: () => tool.fetch(metricsUrl),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
