/**
 * The launcher behind `npm run stack`: fresh token, demo home, Server, Computers and scripted
 * Agents as separate processes on loopback, each on the shipped build (scripts/launch/); live
 * progress; the summary; a clean stop.
 *
 * Order of events:
 *   1. temp dir (home, state dirs, logs), token, demo data, MCP config
 *   2. with --nodes N > 1: redis-server → wait for PING; then the Server node(s) → /healthz
 *   3. Computers (one or more per office) and Agents, spread over the nodes (placement.ts); each
 *      Agent joins its office and waits for its Computers, then reports `ready`
 *   4. all ready → `go` (so the cross-office probe always finds its neighbour's Agent present)
 *   5. all done → `exit`; summary; with --keep the Server and Computers stay up until Ctrl-C
 * Any child dying early, a deadline, SIGINT or SIGTERM stops every process group (Redis last).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MAX_SIZE } from "../../computer/contracts.ts";
import { demoMcpCommand } from "../demo/mcp-command.ts";
import { compileScript, REPO_ROOT } from "../launch/compile.ts";
import { ChildSet, type ManagedChild } from "./children.ts";
import { generateDemoHome, writeDemoMcpConfig } from "./demo-data.ts";
import { nodeReady, spawnNode, startRedis, type RunningRedis } from "./nodes.ts";
import type { StackOptions } from "./options.ts";
import {
  assignScenarios,
  type AgentMessage,
  type AgentPlan,
  type ScenarioResult,
  type StackMessage,
} from "./plan.ts";
import { agentNode, computerNode, nodeName, otherNode } from "./placement.ts";
import { ProgressView } from "./progress.ts";
import type { StackReport } from "./report.ts";

export { REPO_ROOT };

/** Whole-run deadline: the whole stack must finish within 2 minutes on 2 cores. */
const RUN_DEADLINE_MS = Number(process.env.A2C_STACK_DEADLINE_MS ?? 110_000);
const STARTUP_DEADLINE_MS = 45_000;

export interface StackIo {
  /** Progress and messages for people. */
  err: NodeJS.WritableStream;
  /** The report (table or JSON). */
  out: NodeJS.WritableStream;
  tty: boolean;
}

export interface RunningStack {
  report: StackReport;
  /** The first node's URL (office 1's Agent is there). */
  serverUrl: string;
  nodes: { name: string; url: string }[];
  redisUrl: string | null;
  token: string;
  offices: { officeId: string; computers: string[] }[];
  manifestPath: string;
  /** Stops every child and removes the temp dir (logs kept when `keepLogs`). */
  stop(keepLogs: boolean): Promise<void>;
}

class Aborted extends Error {}

function tell(child: ManagedChild, m: StackMessage): void {
  if (child.process.connected) child.process.send(m);
}

function officeId(i: number): string {
  // Unguessable office ids (protocol.md §3.4: never sequential), short enough to print.
  return `office-${i + 1}-${randomBytes(4).toString("hex")}`;
}

function computerName(office: number, k: number, perOffice: number): string {
  return perOffice === 1 ? `computer-${office + 1}` : `computer-${office + 1}-${k + 1}`;
}

/**
 * Starts everything and runs the scenarios. Resolves with the report and a handle that stops the
 * stack. `signal` aborts the run (SIGINT/SIGTERM): every child is stopped before it rejects.
 */
export async function runStack(
  opts: StackOptions,
  io: StackIo,
  signal: AbortSignal,
): Promise<RunningStack> {
  const t0 = Date.now();
  const tmp = mkdtempSync(join(tmpdir(), "a2c-stack-"));
  const logDir = join(tmp, "logs");
  mkdirSync(logDir, { recursive: true });
  const children = new ChildSet(logDir);
  // Redis is stopped after every node is gone, so no node loses its store while it closes.
  const infra = new ChildSet(logDir);
  const stopAll = async (): Promise<void> => {
    await children.stopAll();
    await infra.stopAll();
  };
  const stop = async (keepLogs: boolean): Promise<void> => {
    await stopAll();
    if (keepLogs) {
      // Drop the bulky data, keep what explains a failure.
      rmSync(join(tmp, "home"), { recursive: true, force: true });
      rmSync(join(tmp, "work"), { recursive: true, force: true });
    } else {
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  const onAbort = (): void => void stopAll();
  signal.addEventListener("abort", onAbort, { once: true });
  // Synchronous last resort if the process exits some other way.
  const lastResort = (): void => {
    children.killAllNow();
    infra.killAllNow();
  };
  process.once("exit", lastResort);

  try {
    // Hex, not base64url: a token a person pastes after `--token` must not start with `-`.
    const token = randomBytes(24).toString("hex");
    const say = (line: string): void => void io.err.write(`${line}\n`);
    say(`a2c stack: temp dir ${tmp}`);
    // Children get this stack's settings only: an A2C_* variable left in the user's shell (a
    // path, a buffer size, a token) must not reach one role and not the others.
    const baseEnv: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !k.startsWith("A2C_") || k.startsWith("A2C_STACK_"),
      ),
    );
    baseEnv.A2C_LOG_LEVEL = process.env.A2C_LOG_LEVEL ?? "info";

    let redis: RunningRedis | null = null;
    if (opts.nodes > 1) {
      redis = await startRedis(infra, join(tmp, "redis"), Date.now() + STARTUP_DEADLINE_MS);
      say(`redis ${redis.url} (pid ${redis.child.pid}) answers PING`);
      if (signal.aborted) throw new Aborted();
    }
    // The nodes start while the demo data is written (they need none of it).
    const spawned = Array.from({ length: opts.nodes }, (_, i) => {
      const name = nodeName(i, opts.nodes);
      const spec = {
        name,
        port: i === 0 ? opts.port : 0,
        token,
        redisUrl: redis?.url ?? null,
        env: baseEnv,
      };
      return { name, ...spawnNode(children, spec) };
    });

    const manifest = generateDemoHome(join(tmp, "home"), { bigSize: opts.bigSize });
    const manifestPath = join(tmp, "manifest.json");
    writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
    const mcpConfig = join(tmp, "mcp.json");
    writeDemoMcpConfig(mcpConfig, await demoMcpCommand());
    say(
      `demo home ${manifest.home}: ${manifest.skills.length} skills, big file ${(manifest.files.big.size / 1048576).toFixed(0)} MiB`,
    );
    if (signal.aborted) throw new Aborted();

    const nodes = await Promise.all(
      spawned.map((n) => nodeReady(n.name, n, Date.now() + STARTUP_DEADLINE_MS)),
    );
    for (const n of nodes) say(`${n.name} ${n.url} (pid ${n.child.pid}) healthy`);
    const serverUrl = nodes[0]!.url;

    const offices = Array.from({ length: opts.agents }, (_, i) => ({
      officeId: officeId(i),
      computers: Array.from({ length: opts.computers }, (_, k) =>
        computerName(i, k, opts.computers),
      ),
    }));
    const computerProcs: StackReport["computers"] = [];
    const vital: ManagedChild[] = [...(redis ? [redis.child] : []), ...nodes.map((n) => n.child)];
    for (const [i, office] of offices.entries()) {
      for (const [k, name] of office.computers.entries()) {
        const node = nodes[computerNode(i, k, nodes.length)]!;
        const stateDir = join(tmp, "state", name);
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        const c = children.role("computer", {
          name,
          inheritEnv: baseEnv,
          env: {
            A2C_SERVER_URL: node.url,
            A2C_OFFICE_ID: office.officeId,
            A2C_COMPUTER_NAME: name,
            A2C_TOKEN: token,
            A2C_SKILLS_DIR: manifest.home,
            A2C_MCP_CONFIG: mcpConfig,
            A2C_STATE_DIR: stateDir,
            // Where uploads land (`client:put_blob`); one per Computer, removed with the stack.
            A2C_LANDING_ROOT: join(tmp, "landing", name),
            // The Computer refuses files over its cap (4017 too_large); `--big-mib` may ask more.
            A2C_MAX_SIZE: String(Math.max(DEFAULT_MAX_SIZE, opts.bigSize)),
          },
        });
        vital.push(c);
        computerProcs.push({ name, office: office.officeId, pid: c.pid, node: node.name });
      }
    }
    say(`${computerProcs.length} computer(s) starting in ${offices.length} offices`);
    if (nodes.length > 1) {
      // Where each process talks to: the Agent → Computer paths that cross the Redis bus.
      offices.forEach((o, i) => {
        const at = (c: string): string => computerProcs.find((p) => p.name === c)?.node ?? "?";
        const cs = o.computers.map((c) => `${c} @${at(c)}`).join(", ");
        say(`  ${o.officeId}: agent-${i + 1} @${nodes[agentNode(i, nodes.length)]!.name} → ${cs}`);
      });
    }

    const plan = assignScenarios(opts.agents, opts.only);
    const workDir = join(tmp, "work");
    mkdirSync(workDir, { recursive: true });
    const results: ScenarioResult[] = [];
    const agentProcs: StackReport["agents"] = [];
    const laneSizes = new Map<string, number>();
    const agents: { name: string; child: ManagedChild; scenarios: string[] }[] = [];
    const view = new ProgressView(
      io.err,
      io.tty,
      new Map(plan.map((ids, i) => [`agent-${i + 1}`, ids.length])),
    );

    // The scripted Agents run the SDK as an application does: its built package, plain node.
    const agentMain = await compileScript("scripts/stack/agent-main.ts");
    // "done", "aborted", or why the run stopped early.
    const outcome = await new Promise<string>((settle) => {
      let ready = 0;
      let done = 0;
      const timer = setTimeout(
        () => settle(`deadline of ${RUN_DEADLINE_MS / 1000} s passed`),
        RUN_DEADLINE_MS,
      );
      const finish = (why: string): void => {
        clearTimeout(timer);
        settle(why);
      };
      signal.addEventListener("abort", () => finish("aborted"), { once: true });
      for (const c of vital) {
        void c.exited.then((code) => {
          if (!children.stopping)
            finish(`${c.name} exited with ${code}:\n  ${c.tail().join("\n  ")}`);
        });
      }
      plan.forEach((scenarios, i) => {
        const name = `agent-${i + 1}`;
        const office = offices[i]!;
        const neighbour = offices[(i + 1) % offices.length]!;
        const node = agentNode(i, nodes.length);
        const agentPlan: AgentPlan = {
          agent: name,
          officeId: office.officeId,
          serverUrl: nodes[node]!.url,
          otherServerUrl: nodes[otherNode(node, nodes.length)]!.url,
          token,
          computers: office.computers,
          neighbour: { officeId: neighbour.officeId, computer: neighbour.computers[0]! },
          manifest,
          scenarios,
          workDir: join(workDir, name),
        };
        mkdirSync(agentPlan.workDir, { recursive: true });
        const planFile = join(tmp, `${name}.plan.json`);
        writeFileSync(planFile, JSON.stringify(agentPlan));
        laneSizes.set(name, scenarios.length);
        const child = children.spawn({
          name,
          command: process.execPath,
          args: [agentMain, planFile],
          cwd: REPO_ROOT,
          env: baseEnv,
          ipc: true,
        });
        agents.push({ name, child, scenarios });
        agentProcs.push({ name, office: office.officeId, pid: child.pid, node: nodes[node]!.name });
        let finished = false;
        child.process.on("message", (raw) => {
          const m = raw as AgentMessage;
          if (m.t === "ready" && ++ready === plan.length) {
            for (const a of agents) tell(a.child, { t: "go" });
          } else if (m.t === "start") view.start(name, m.id);
          else if (m.t === "progress") view.progress(name, m.id, m.bytes, m.total);
          else if (m.t === "result") {
            results.push(m.result);
            view.result(name, m.result);
          } else if (m.t === "fatal") {
            finish(`${name}: ${m.message}`);
          } else if (m.t === "done" && !finished) {
            finished = true;
            if (++done === plan.length) {
              for (const a of agents) tell(a.child, { t: "exit" });
              finish("done");
            }
          }
        });
        void child.exited.then((code) => {
          if (!finished && !children.stopping) {
            finish(`${name} exited with ${code} before finishing:\n  ${child.tail().join("\n  ")}`);
          }
        });
      });
    });
    view.stop();
    if (outcome === "aborted") throw new Aborted();

    // Agents exit on `exit`; give them a moment, then the stop below takes care of stragglers.
    if (outcome === "done") {
      await Promise.race([
        Promise.all(agents.map((a) => a.child.exited)),
        new Promise((r) => setTimeout(r, 3000).unref()),
      ]);
    }

    const reported = new Set(results.map((r) => `${r.agent}/${r.id}`));
    const missing = agents.flatMap((a) =>
      a.scenarios
        .filter((id) => !reported.has(`${a.name}/${id}`))
        .map((id) => ({ id, agent: a.name })),
    );
    const ok = outcome === "done" && missing.length === 0 && results.every((r) => r.ok);
    if (outcome !== "done") say(`stack aborted: ${outcome}`);
    const report: StackReport = {
      ok,
      ms: Date.now() - t0,
      server: { url: serverUrl, pid: nodes[0]!.child.pid },
      nodes: nodes.map((n) => ({ name: n.name, url: n.url, pid: n.child.pid })),
      redis: redis ? { url: redis.url, pid: redis.child.pid } : null,
      computers: computerProcs,
      agents: agentProcs,
      results,
      missing,
      logDir: ok && !opts.keep ? null : logDir,
    };
    signal.removeEventListener("abort", onAbort);
    return {
      report,
      serverUrl,
      nodes: nodes.map((n) => ({ name: n.name, url: n.url })),
      redisUrl: redis?.url ?? null,
      token,
      offices,
      manifestPath,
      stop: async (keepLogs) => {
        await stop(keepLogs);
        process.removeListener("exit", lastResort);
      },
    };
  } catch (err) {
    // A Ctrl-C during start-up surfaces as whatever step it cut short (a child that exited, a
    // spawn refused while stopping): it is still an abort.
    const aborted = err instanceof Aborted || signal.aborted;
    await stop(!aborted);
    process.removeListener("exit", lastResort);
    throw aborted ? new Aborted() : err;
  }
}

export { Aborted };
