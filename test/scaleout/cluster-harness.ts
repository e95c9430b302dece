/**
 * Helpers for the scale-out tests: Server nodes sharing one real Redis (in-process or as a real
 * child process that can be SIGKILLed), a real Computer with the SKILL and tool services, plain
 * socket.io-client sockets for wire-level checks, and a failover TCP "load balancer".
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  createServer,
  connect,
  type Server as NetServer,
  type Socket as NetSocket,
} from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino, type Logger } from "pino";
import { io as connectIo, type Socket } from "socket.io-client";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { createSkillService } from "../../computer/skills/index.ts";
import { createToolService } from "../../computer/tools/service.ts";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";
import type { AdapterKind } from "../../server/redis/cluster.ts";
import { RedisOfficeRegistry } from "../../server/redis/registry.ts";
import { startServer, type RunningServer } from "../../server/server.ts";
import type { LaunchedProcess } from "../../scripts/launch/process.ts";
import { startServerProcess } from "../../scripts/launch/roles.ts";
import { TEST_TRANSPORT } from "../support/server-harness.ts";
import { demoServer } from "../support/tools-harness.ts";

export const TOKEN = "scaleout-token-0123456789";
export const quiet = pino({ level: process.env.A2C_LOG_LEVEL ?? "silent" });

/**
 * In tests a crashed node is noticed within ~100 ms (production default: 1 s). The TTL only
 * matters for hung nodes; it stays generous so a node stalled by a loaded machine is not fenced.
 */
export const TEST_HEARTBEAT_MS = 100;
export const TEST_NODE_TTL_MS = 5_000;

/** Guard against a hung test, not a pacing device. */
export const WAIT_MS = 15_000;

export interface NodeOptions {
  prefix: string;
  relayTimeoutMs?: number;
  adapter?: AdapterKind;
  nodeTtlMs?: number;
  heartbeatIntervalMs?: number;
  commandTimeoutMs?: number;
  /** The node's `maxUnreadBytes` (also its bound on upload chunks in flight to one Computer). */
  maxUnreadBytes?: number;
}

export interface TestNode {
  readonly server: RunningServer;
  /** The node's Redis registry (its `nodeId` names the node). */
  readonly registry: RedisOfficeRegistry;
  readonly url: string;
  close(): Promise<void>;
}

/** A Server node in this process, on the shared Redis (`startServer({ redis })`). */
export async function startNode(redisUrl: string, opts: NodeOptions): Promise<TestNode> {
  const server = await startServer({
    port: 0,
    tokens: [TOKEN],
    logger: quiet,
    transport: TEST_TRANSPORT,
    // Short: the adapter keeps a timer per cross-node request for the relay timeout, and a test
    // process exits only when those have run out.
    relayTimeoutMs: opts.relayTimeoutMs ?? 5_000,
    toolCallGraceMs: 1_000,
    ...(opts.maxUnreadBytes !== undefined ? { maxUnreadBytes: opts.maxUnreadBytes } : {}),
    redis: {
      url: redisUrl,
      prefix: opts.prefix,
      nodeTtlMs: opts.nodeTtlMs ?? TEST_NODE_TTL_MS,
      heartbeatIntervalMs: opts.heartbeatIntervalMs ?? TEST_HEARTBEAT_MS,
      ...(opts.adapter ? { adapter: opts.adapter } : {}),
      ...(opts.commandTimeoutMs ? { commandTimeoutMs: opts.commandTimeoutMs } : {}),
    },
  });
  assert.ok(server.registry instanceof RedisOfficeRegistry);
  return { server, registry: server.registry, url: server.url, close: () => server.close() };
}

export interface NodeProcess {
  readonly url: string;
  readonly proc: LaunchedProcess;
  /** SIGKILL (no clean close: no leave, no deregistration) and wait for the exit. */
  kill(): Promise<void>;
}

/** A Server node as a real process (`a2c-server --redis URL`; no Redis: a plain node). */
export async function spawnNode(
  redisUrl: string,
  prefix: string,
  adapter: AdapterKind = "classic",
  timing: { nodeTtlMs: number } = { nodeTtlMs: TEST_NODE_TTL_MS },
): Promise<NodeProcess> {
  const { proc, url } = await startServerProcess({
    name: `server node ${prefix}`,
    args: redisUrl
      ? ["--redis", redisUrl, "--redis-prefix", prefix, "--redis-adapter", adapter]
      : [],
    env: {
      A2C_TOKENS: TOKEN,
      A2C_REDIS_NODE_TTL_MS: String(timing.nodeTtlMs),
      ...(TEST_TRANSPORT === "stock" ? { A2C_SERVER_TRANSPORT: "stock" } : {}),
    },
  });
  return {
    url,
    proc,
    kill: async () => {
      await proc.kill();
    },
  };
}

/** A socket.io-client socket to a node, connected (not joined). */
export async function rawSocket(url: string): Promise<Socket> {
  const s = connectIo(`${url}${NAMESPACE}`, {
    query: { a2c_version: PROTOCOL_VERSION },
    auth: { token: TOKEN },
    transports: ["websocket"],
    forceNew: true,
    reconnection: false,
  });
  await new Promise<void>((resolve, reject) => {
    s.once("connect", () => resolve());
    s.once("connect_error", reject);
  });
  return s;
}

/** `server:join_office` with the two-argument ack. */
export function joinOffice(
  s: Socket,
  role: "agent" | "computer",
  name: string,
  office: string,
): Promise<[boolean, string | null]> {
  return new Promise((resolve) =>
    s.emit(
      "server:join_office",
      { role, name, office_id: office },
      (ok: boolean, r: string | null) => resolve([ok, r]),
    ),
  );
}

/** Resolves with the first `event` on `s` whose payload passes `match`. */
export function waitFor<T = unknown>(
  s: Socket,
  event: string,
  match: (payload: T) => boolean = () => true,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      s.off(event, on);
      reject(new Error(`no ${event} within ${WAIT_MS} ms`));
    }, WAIT_MS);
    const on = (payload: T): void => {
      if (!match(payload)) return;
      clearTimeout(timer);
      s.off(event, on);
      resolve(payload);
    };
    s.on(event, on);
  });
}

export interface SkillHome {
  dir: string;
  /** sha256 of `user/big/data.bin`. */
  sha256: string;
  size: number;
}

/** A skill home with one skill `big` holding a random binary file of `size` bytes. */
export async function skillHome(size: number): Promise<SkillHome> {
  const dir = await mkdtemp(join(tmpdir(), "a2c-scaleout-"));
  const skill = join(dir, "home", "user", "big");
  await mkdir(skill, { recursive: true });
  await writeFile(
    join(skill, "SKILL.md"),
    "---\nname: big\ndescription: a large binary for the scale-out tests\n---\nSee data.bin.\n",
  );
  const bytes = randomBytes(size);
  await writeFile(join(skill, "data.bin"), bytes);
  return { dir, sha256: createHash("sha256").update(bytes).digest("hex"), size };
}

/** The real Computer with the SKILL service (home of `skillHome`) and the demo MCP tools. */
export async function computer(
  serverUrl: string,
  office: string,
  name: string,
  home: SkillHome,
  logger: Logger = quiet,
): Promise<RunningComputer> {
  const demo = await demoServer();
  return startComputer({
    server: serverUrl,
    office,
    name,
    token: TOKEN,
    stateDir: join(home.dir, "state", name),
    workers: 0,
    startTimeoutMs: WAIT_MS,
    logger,
    services: [
      (ctx) =>
        createSkillService({
          config: ctx.config,
          home: join(home.dir, "home"),
          minter: ctx.minter,
          log: ctx.log,
          watch: false,
        }),
      (ctx) =>
        createToolService({
          config: ctx.config,
          servers: { demo },
          minter: ctx.minter,
          log: ctx.log,
        }),
    ],
  });
}

export async function removeHome(home: SkillHome): Promise<void> {
  await rm(home.dir, { recursive: true, force: true });
}

/**
 * A TCP load balancer with failover: each new connection goes to the first backend that accepts
 * it. Killing the first backend sends reconnecting clients to the next, as an LB health check
 * would (clients only ever see the balancer's URL).
 */
export class FailoverProxy {
  private readonly server: NetServer;
  private readonly open = new Set<NetSocket>();
  url = "";

  constructor(private readonly backends: string[]) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    const addr = this.server.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    this.url = `http://127.0.0.1:${port}`;
    return this.url;
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(s: NetSocket): void {
    this.open.add(s);
    s.on("close", () => this.open.delete(s));
    s.on("error", () => s.destroy());
  }

  private accept(client: NetSocket): void {
    this.track(client);
    client.pause();
    const tryBackend = (i: number): void => {
      const target = this.backends[i];
      if (target === undefined) return void client.destroy();
      const { hostname, port } = new URL(target);
      const upstream = connect({ host: hostname, port: Number(port) });
      const refused = (): void => {
        upstream.destroy();
        if (!client.destroyed) tryBackend(i + 1);
      };
      upstream.once("error", refused);
      upstream.once("connect", () => {
        upstream.off("error", refused);
        this.track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
    };
    tryBackend(0);
  }
}
