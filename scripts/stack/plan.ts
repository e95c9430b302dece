/**
 * What the stack asks each scripted Agent to do, and what the Agents report back (over the IPC
 * channel of their process). Shared by the launcher and `agent-main.ts`.
 */
import type { DemoManifest } from "./demo-data.ts";

export interface ScenarioInfo {
  id: string;
  title: string;
}

/** Every scenario, in the order of the summary table. */
export const SCENARIOS: readonly ScenarioInfo[] = [
  { id: "list-skills", title: "list skills" },
  { id: "skill-inline", title: "read inline SKILL.md" },
  { id: "skill-over-budget", title: "text over budget, handle drained to body" },
  { id: "pull-serial", title: "pull PNG + big file, serial, base64 (spec mode)" },
  { id: "pull-window-8", title: "pull PNG + big file, window 8, binary (SDK default)" },
  { id: "cli-download", title: "download big file to disk with the CLI (its defaults)" },
  { id: "tool-png", title: "tool: large PNG sidebanded, small inline" },
  { id: "tool-cancel", title: "cancel a slow tool call" },
  { id: "tool-timeout", title: "tool call that times out" },
  { id: "upload-read-back", title: "upload a file, a tool reads it by its landing path" },
  { id: "rewrite-during-pull", title: "resource rewritten while pulled" },
  { id: "forbidden-path", title: "forbidden path → 4017" },
  { id: "forged-handle", title: "forged handle → 4018" },
  { id: "cross-office-probe", title: "probe another office (must fail)" },
];

/**
 * The adversary (Agent 0) probes its neighbour's office; the others move the bytes. Agent 0 also
 * runs the CLI download, last: the CLI is an Agent of its own, so Agent 0 leaves its office for
 * it, and nobody probes office 0 (so the probe never finds an office without its Agent).
 */
const ADVERSARY = ["cross-office-probe", "forbidden-path", "forged-handle", "cli-download"];
/** Heaviest first, dealt round-robin so the big transfers land on different Agents. */
const WORKERS = [
  "pull-window-8",
  "pull-serial",
  "rewrite-during-pull",
  "tool-png",
  "upload-read-back",
  "tool-cancel",
  "tool-timeout",
  "list-skills",
  "skill-inline",
  "skill-over-budget",
];

/** Scenario ids per Agent index. `only` filters (empty = all). */
export function assignScenarios(agents: number, only: readonly string[]): string[][] {
  const known = new Set(SCENARIOS.map((s) => s.id));
  for (const id of only) if (!known.has(id)) throw new Error(`unknown scenario: ${id}`);
  const want = (id: string): boolean => only.length === 0 || only.includes(id);
  const plan: string[][] = Array.from({ length: agents }, () => []);
  plan[0]!.push(...ADVERSARY.filter(want));
  const workers = WORKERS.filter(want);
  const lanes = agents - 1;
  workers.forEach((id, i) => plan[1 + (i % lanes)]!.push(id));
  // Keep Agent 0's CLI download last.
  return plan;
}

export interface Neighbour {
  officeId: string;
  computer: string;
}

export interface AgentPlan {
  agent: string;
  officeId: string;
  /** The Server node this Agent talks to. */
  serverUrl: string;
  /**
   * Another node of the same deployment (scale-out), or absent: the probe's intruder joins the
   * office there, so "one Agent per office" is checked across nodes.
   */
  otherServerUrl?: string;
  token: string;
  /** Computers in this Agent's office. */
  computers: string[];
  /** Another office (with its Agent present) and one of its Computers, for the probe. */
  neighbour: Neighbour;
  manifest: DemoManifest;
  scenarios: string[];
  /** Scratch directory for downloads. */
  workDir: string;
}

export interface ScenarioResult {
  id: string;
  agent: string;
  ok: boolean;
  /** Bytes moved and verified (0 when the scenario moves none). */
  bytes: number;
  ms: number;
  /** sha256 checked against the generator's value: true/false, or null when not applicable. */
  verified: boolean | null;
  /** Pull restarts (source changed mid-read). */
  restarts: number;
  /** One line: what was checked, or why it failed. */
  detail: string;
}

/** Agent process → stack. */
export type AgentMessage =
  | { t: "ready" }
  | { t: "start"; id: string }
  | { t: "progress"; id: string; bytes: number; total: number }
  | { t: "result"; result: ScenarioResult }
  | { t: "done" }
  | { t: "fatal"; message: string };

/** Stack → Agent process. */
export type StackMessage = { t: "go" } | { t: "exit" };
