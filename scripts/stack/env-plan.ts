/**
 * The scripted Agent's plan from environment variables (standalone mode: the docker compose
 * `agent` service). Names: A2C_SERVER_URL, A2C_OFFICE_ID, A2C_TOKEN, A2C_AGENT_NAME (as the
 * Agent CLI), plus A2C_STACK_COMPUTERS (comma-separated Computers of the office),
 * A2C_STACK_MANIFEST (the demo manifest), A2C_STACK_NEIGHBOUR_OFFICE / _COMPUTER (the probe's
 * target), A2C_STACK_OTHER_SERVER_URL (another Server node, where the probe's intruder joins) and
 * A2C_STACK_SCENARIOS (comma-separated ids; all when unset).
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DemoManifest } from "./demo-data.ts";
import { SCENARIOS, type AgentPlan } from "./plan.ts";

function need(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Standalone mode: the plan from environment variables. */
export function planFromEnv(env: NodeJS.ProcessEnv = process.env): AgentPlan {
  const manifestFile = need(env, "A2C_STACK_MANIFEST");
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as DemoManifest;
  const computers = need(env, "A2C_STACK_COMPUTERS")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const only = (env.A2C_STACK_SCENARIOS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    agent: env.A2C_AGENT_NAME ?? "agent-1",
    officeId: need(env, "A2C_OFFICE_ID"),
    serverUrl: need(env, "A2C_SERVER_URL"),
    ...(env.A2C_STACK_OTHER_SERVER_URL ? { otherServerUrl: env.A2C_STACK_OTHER_SERVER_URL } : {}),
    token: need(env, "A2C_TOKEN"),
    computers,
    neighbour: {
      officeId: env.A2C_STACK_NEIGHBOUR_OFFICE ?? "no-such-office",
      // Without a neighbour the probe targets a name that exists nowhere: still must be 404.
      computer: env.A2C_STACK_NEIGHBOUR_COMPUTER ?? "no-such-computer",
    },
    manifest,
    scenarios: SCENARIOS.map((s) => s.id).filter((id) => only.length === 0 || only.includes(id)),
    // Created by the scenario that writes there (cli-download).
    workDir: join(tmpdir(), `a2c-agent-${process.pid}`),
  };
}
