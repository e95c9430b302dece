/** What every section gets from the runner, and the shape of a section's outcome. */
import type { IntegrityLedger } from "./integrity.ts";
import type { Plan } from "./plan.ts";

export interface Ctx {
  plan: Plan;
  ledger: IntegrityLedger;
  /** Scratch folder for generated resources (removed at the end). */
  dataDir: string;
  /** Progress line on stderr (the report is the output; this is for the person waiting). */
  log(message: string): void;
  /** Results of the sections that already ran (later sections build on earlier ones). */
  results: Partial<Record<SectionId, SectionOutcome>>;
  /**
   * `--baseline DIR`: another built checkout whose roles the links and paths sections run beside
   * ours, case by case (before/after in one run).
   */
  baseline?: string;
  /** `--congestion NAME`: the TCP congestion control of the links and paths sections' hosts. */
  congestion?: string;
}

export type SectionId =
  | "micro"
  | "ceiling"
  | "sweep"
  | "direct"
  | "userView"
  | "upload"
  | "manyAgents"
  | "rewrites"
  | "computerCost"
  | "http"
  | "twoNode"
  | "transport"
  | "capacity"
  | "links"
  | "paths"
  | "codecs";

export type SectionOutcome =
  | { status: "done"; seconds: number; data: unknown; notes: string[] }
  | { status: "skipped"; seconds: number; reason: string }
  | { status: "failed"; seconds: number; error: string; integrity: boolean };

/** Thrown by a section that cannot run yet (a part of the stack has not landed). */
export class SkipSection extends Error {
  override name = "SkipSection";
}
