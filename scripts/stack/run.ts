/**
 * The launcher behind `npm run stack`: fresh token, demo home, Server, Computers and scripted
 * Agents as separate processes on loopback; live progress; the summary; a clean stop.
 *
 * Order of events:
 *   1. temp dir (home, state dirs, logs), token, demo data, MCP config
 *   2. Server → wait for /healthz
 *   3. Computers (one or more per office) and Agents; each Agent joins its office and waits for
 *      its Computers, then reports `ready`
 *   4. all ready → `go` (so the cross-office probe always finds its neighbour's Agent present)
 *   5. all done → `exit`; summary; with --keep the Server and Computers stay up until Ctrl-C
 * Any child dying early, a deadline, SIGINT or SIGTERM stops every process group.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ChildSet, type ManagedChild } from "./children.ts";
import { generateDemoHome, writeDemoMcpConfig } from "./demo-data.ts";
import type { StackOptions } from "./options.ts";
import {
  assignScenarios,
  type AgentMessage,
  type AgentPlan,
  type ScenarioResult,
  type StackMessage,
} from "./plan.ts";
import { ProgressView } from "./progress.ts";
import type { StackReport } from "./report.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
/** Node with the tsx loader: how every TypeScript entry point of the repo runs. */
export const NODE_TSX = [process.execPath, "--import", "tsx"] as const;

/** Whole-run deadline: the bound is 2 minutes on 2 cores. */
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
  serverUrl: string;
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

/** Resolves when `url` answers 200, rejects when `child` exits first or the deadline passes. */
async function waitHealthy(url: string, child: ManagedChild, deadline: number): Promise<void> {
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (!exited) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${child.name} not healthy at ${url} in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${child.name} exited during start-up:\n  ${child.tail().join("\n  ")}`);
}

function officeId(i: number): string {
  // Unguessable office ids (room-model.md: avoid sequential ids), short enough to print.
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
  const stop = async (keepLogs: boolean): Promise<void> => {
    await children.stopAll();
    if (keepLogs) {
      // Drop the bulky data, keep what explains a failure.
      rmSync(join(tmp, "home"), { recursive: true, force: true });
      rmSync(join(tmp, "work"), { recursive: true, force: true });
    } else {
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  const onAbort = (): void => void children.stopAll();
  signal.addEventListener("abort", onAbort, { once: true });
  // Synchronous last resort if the process exits some other way.
  const lastResort = (): void => children.killAllNow();
  process.once("exit", lastResort);

  try {
    const token = randomBytes(24).toString("base64url");
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

    // The Server starts while the demo data is written (it needs none of it).
    let announced: (url: string) => void = () => {};
    const listening = new Promise<string>((r) => (announced = r));
    const server = children.spawn({
      name: "server",
      command: NODE_TSX[0],
      args: [...NODE_TSX.slice(1), "server/main.ts"],
      cwd: REPO_ROOT,
      env: { ...baseEnv, A2C_HOST: "127.0.0.1", A2C_PORT: String(opts.port), A2C_TOKENS: token },
      // server/main.ts prints exactly one stdout line: `listening on http://HOST:PORT`.
      onLine: (line) => {
        const m = /^listening on (\S+)/.exec(line);
        if (m) announced(m[1]!);
      },
    });

    const manifest = generateDemoHome(join(tmp, "home"), { bigSize: opts.bigSize });
    const manifestPath = join(tmp, "manifest.json");
    writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
    const mcpConfig = join(tmp, "mcp.json");
    writeDemoMcpConfig(mcpConfig, REPO_ROOT);
    say(
      `demo home ${manifest.home}: ${manifest.skills.length} skills, big file ${(manifest.files.big.size / 1048576).toFixed(0)} MiB`,
    );
    if (signal.aborted) throw new Aborted();

    const serverUrl = await Promise.race([
      listening,
      server.exited.then((code) => {
        throw new Error(`server exited with ${code}:\n  ${server.tail().join("\n  ")}`);
      }),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error("server did not start in time")),
          STARTUP_DEADLINE_MS,
        ).unref(),
      ),
    ]);
    await waitHealthy(`${serverUrl}/healthz`, server, Date.now() + STARTUP_DEADLINE_MS);
    say(`server ${serverUrl} (pid ${server.pid}) healthy`);

    const offices = Array.from({ length: opts.agents }, (_, i) => ({
      officeId: officeId(i),
      computers: Array.from({ length: opts.computers }, (_, k) =>
        computerName(i, k, opts.computers),
      ),
    }));
    const computerProcs: StackReport["computers"] = [];
    const vital: ManagedChild[] = [server];
    for (const office of offices) {
      for (const name of office.computers) {
        const stateDir = join(tmp, "state", name);
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        const c = children.spawn({
          name,
          command: NODE_TSX[0],
          args: [...NODE_TSX.slice(1), "computer/main.ts"],
          cwd: REPO_ROOT,
          env: {
            ...baseEnv,
            A2C_SERVER_URL: serverUrl,
            A2C_OFFICE_ID: office.officeId,
            A2C_COMPUTER_NAME: name,
            A2C_TOKEN: token,
            A2C_SKILLS_DIR: manifest.home,
            A2C_MCP_CONFIG: mcpConfig,
            A2C_STATE_DIR: stateDir,
          },
        });
        vital.push(c);
        computerProcs.push({ name, office: office.officeId, pid: c.pid });
      }
    }
    say(`${computerProcs.length} computer(s) starting in ${offices.length} offices`);

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
        const agentPlan: AgentPlan = {
          agent: name,
          officeId: office.officeId,
          serverUrl,
          token,
          computers: office.computers,
          neighbour: { officeId: neighbour.officeId, computer: neighbour.computers[0]! },
          manifest,
          scenarios,
          repoRoot: REPO_ROOT,
          workDir: join(workDir, name),
        };
        mkdirSync(agentPlan.workDir, { recursive: true });
        const planFile = join(tmp, `${name}.plan.json`);
        writeFileSync(planFile, JSON.stringify(agentPlan));
        laneSizes.set(name, scenarios.length);
        const child = children.spawn({
          name,
          command: NODE_TSX[0],
          args: [...NODE_TSX.slice(1), "scripts/stack/agent-main.ts", planFile],
          cwd: REPO_ROOT,
          env: baseEnv,
          ipc: true,
        });
        agents.push({ name, child, scenarios });
        agentProcs.push({ name, office: office.officeId, pid: child.pid });
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
      server: { url: serverUrl, pid: server.pid },
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
      token,
      offices,
      manifestPath,
      stop: async (keepLogs) => {
        await stop(keepLogs);
        process.removeListener("exit", lastResort);
      },
    };
  } catch (err) {
    await stop(!(err instanceof Aborted));
    process.removeListener("exit", lastResort);
    throw err;
  }
}

export { Aborted };
