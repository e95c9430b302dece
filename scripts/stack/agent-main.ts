/**
 * A scripted Agent: one process, one office, a list of scenarios, run one after the other with
 * the Agent SDK against a real Server and real Computers.
 *
 * Two ways to run it:
 * - by the stack launcher: `agent-main.ts <plan.json>` with an IPC channel; it reports `ready`,
 *   waits for `go`, streams progress/results, reports `done`, and waits for `exit`. If the
 *   launcher dies (IPC disconnect) it exits at once, so it never outlives the stack.
 * - standalone (docker compose `agent` service): the plan comes from the environment
 *   (A2C_SERVER_URL, A2C_OFFICE_ID, A2C_TOKEN, A2C_AGENT_NAME, A2C_STACK_*; see
 *   docs/configuration.md); it prints progress and the summary and exits 0 only if all passed.
 */
import { readFileSync } from "node:fs";
import { AgentClient } from "../../agent/index.ts";
import { planFromEnv } from "./env-plan.ts";
import {
  type AgentMessage,
  type AgentPlan,
  type ScenarioResult,
  type StackMessage,
} from "./plan.ts";
import { ProgressView } from "./progress.ts";
import { renderSummary } from "./report.ts";
import { describe, type ScenarioContext } from "./scenarios/context.ts";
import { SCENARIO_IMPLS } from "./scenarios/index.ts";

/** One scenario may take this long (the 64 MiB pulls need a few seconds on 2 cores). */
const SCENARIO_DEADLINE_MS = Number(process.env.A2C_STACK_SCENARIO_TIMEOUT_MS ?? 90_000);
/** How long to wait for the office's Computers to join. */
const COMPUTER_WAIT_MS = Number(process.env.A2C_STACK_COMPUTER_WAIT_MS ?? 120_000);

const ipc = typeof process.send === "function";

function send(m: AgentMessage): void {
  if (ipc && process.connected) process.send!(m);
}

/** Resolves on the first message of type `t` from the launcher. */
function nextMessage(t: StackMessage["t"]): Promise<void> {
  return new Promise((resolveMsg) => {
    const on = (m: StackMessage): void => {
      if (m.t !== t) return;
      process.off("message", on);
      resolveMsg();
    };
    process.on("message", on);
  });
}

async function runOne(
  id: string,
  client: AgentClient,
  plan: AgentPlan,
  onProgress: (bytes: number, total: number) => void,
): Promise<ScenarioResult> {
  const impl = SCENARIO_IMPLS[id];
  const started = Date.now();
  const base = { id, agent: plan.agent };
  if (!impl)
    return {
      ...base,
      ok: false,
      bytes: 0,
      ms: 0,
      verified: null,
      restarts: 0,
      detail: "unknown scenario",
    };
  const deadline = AbortSignal.timeout(SCENARIO_DEADLINE_MS);
  const ctx: ScenarioContext = {
    client,
    plan,
    computer: plan.computers[0]!,
    progress: onProgress,
    signal: deadline,
  };
  try {
    const outcome = await Promise.race([
      impl(ctx),
      new Promise<never>((_, reject) =>
        deadline.addEventListener("abort", () =>
          reject(new Error(`no verdict within ${SCENARIO_DEADLINE_MS / 1000} s`)),
        ),
      ),
    ]);
    return { ...base, ok: true, ms: Date.now() - started, ...outcome };
  } catch (err) {
    return {
      ...base,
      ok: false,
      bytes: 0,
      ms: Date.now() - started,
      verified: null,
      restarts: 0,
      detail: describe(err),
    };
  }
}

async function main(): Promise<number> {
  if (ipc) process.on("disconnect", () => process.exit(1)); // the launcher is gone
  process.on("SIGTERM", () => process.exit(143));
  const planFile = process.argv[2];
  const plan = planFile ? (JSON.parse(readFileSync(planFile, "utf8")) as AgentPlan) : planFromEnv();
  const view = ipc
    ? undefined
    : new ProgressView(
        process.stdout,
        process.stdout.isTTY === true,
        new Map([[plan.agent, plan.scenarios.length]]),
      );

  const client = new AgentClient({ url: plan.serverUrl, token: plan.token, name: plan.agent });
  try {
    await client.connect();
    await client.joinOffice(plan.officeId);
    for (const c of plan.computers)
      await client.waitForComputer(c, { timeoutMs: COMPUTER_WAIT_MS });
  } catch (err) {
    send({ t: "fatal", message: `could not start: ${describe(err)}` });
    if (!ipc) process.stderr.write(`${plan.agent}: could not start: ${describe(err)}\n`);
    await client.close();
    return 1;
  }
  send({ t: "ready" });
  if (ipc) await nextMessage("go");

  const results: ScenarioResult[] = [];
  const started = Date.now();
  for (const id of plan.scenarios) {
    send({ t: "start", id });
    view?.start(plan.agent, id);
    // The pull loop reports every chunk; the launcher redraws at most 5×/s, so send 10×/s.
    let lastSent = 0;
    const result = await runOne(id, client, plan, (bytes, total) => {
      const now = Date.now();
      if (now - lastSent < 100 && bytes < total) return;
      lastSent = now;
      send({ t: "progress", id, bytes, total });
      view?.progress(plan.agent, id, bytes, total);
    });
    results.push(result);
    send({ t: "result", result });
    view?.result(plan.agent, result);
  }
  send({ t: "done" });
  view?.stop();
  // Stay in the office until every Agent is done (a probe may still be looking at it).
  if (ipc) await nextMessage("exit");
  await client.close();
  const ok = results.every((r) => r.ok);
  if (!ipc) {
    process.stdout.write(
      `\n${renderSummary({
        ok,
        ms: Date.now() - started,
        server: { url: plan.serverUrl, pid: 0 },
        nodes: [],
        redis: null,
        computers: [],
        agents: [
          { name: plan.agent, office: plan.officeId, pid: process.pid, node: plan.serverUrl },
        ],
        results,
        missing: [],
        logDir: null,
      })}`,
    );
  }
  return ok ? 0 : 1;
}

process.exitCode = await main();
// The IPC channel would keep this process alive: let it go (the launcher is not gone; it told us).
if (ipc) {
  process.removeAllListeners("disconnect");
  process.disconnect();
}
