/** What a scenario gets, what it returns, and the small checks they all use. */
import { createHash } from "node:crypto";
import type { AgentClient } from "../../../agent/index.ts";
import type { AgentPlan } from "../plan.ts";

export interface ScenarioContext {
  client: AgentClient;
  plan: AgentPlan;
  /** The office's first Computer (the one most scenarios talk to). */
  computer: string;
  /** Reports bytes moved so far (live progress). */
  progress: (bytes: number, total: number) => void;
  /** Aborted when the scenario's own deadline passes or the stack stops. */
  signal: AbortSignal;
}

export interface Outcome {
  bytes: number;
  /** sha256 checked against the generator's value (null: nothing to verify). */
  verified: boolean | null;
  restarts: number;
  /** What was checked, in one line. */
  detail: string;
}

export type Scenario = (ctx: ScenarioContext) => Promise<Outcome>;

/** A failed expectation; its message is the summary's failure detail. */
export class CheckFailed extends Error {
  override readonly name = "CheckFailed";
}

export function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new CheckFailed(message);
}

export function sha256(buf: Buffer | string): string {
  return createHash("sha256").update(buf).digest("hex");
}

/**
 * Runs `fn`, which must fail, and returns what it threw. A success is a failed check: these are
 * the scenarios where the stack must say no.
 */
export async function mustFail(what: string, fn: () => Promise<unknown>): Promise<unknown> {
  let result: unknown;
  try {
    result = await fn();
  } catch (err) {
    return err;
  }
  throw new CheckFailed(`${what} succeeded (${JSON.stringify(result)?.slice(0, 120)})`);
}

/** `code` and `details.reason` of a protocol error (or undefined for anything else). */
export function wireCode(err: unknown): { code?: number; reason?: string; name: string } {
  const e = err as { code?: unknown; reason?: unknown; name?: unknown };
  return {
    ...(typeof e.code === "number" ? { code: e.code } : {}),
    ...(typeof e.reason === "string" ? { reason: e.reason } : {}),
    name: typeof e.name === "string" ? e.name : String(err),
  };
}

export function describe(err: unknown): string {
  const w = wireCode(err);
  const msg = err instanceof Error ? err.message : String(err);
  return `${w.name}${w.code !== undefined ? ` ${w.code}` : ""}${w.reason ? ` ${w.reason}` : ""}: ${msg}`;
}
