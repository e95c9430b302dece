/** The report's data model (report.json is exactly this). */
import type { SectionId, SectionOutcome } from "../lib/context.ts";
import type { Plan } from "../lib/plan.ts";
import type { Verdict } from "./verdict.ts";

export interface Goal {
  id: string;
  text: string;
  status: "met" | "missed" | "not measured";
  /** The measured value in words, e.g. "92.3% (41.0 of 44.4 MB/s)". */
  measured: string;
  /** Where the number comes from. */
  evidence: string;
  /** For a missed goal: why, and what would fix it. */
  why?: string;
}

export interface RunMeta {
  title: string;
  startedAt: string;
  finishedAt: string;
  /** The checkout's commit when the run started (`+changes`: with uncommitted changes); absent in reports before 2026-12-05. */
  commit?: string | null;
  quick: boolean;
  /** The command line, without the output folder (no machine paths in a committed report). */
  argv: string[];
  node: string;
  cpus: number;
  cpuModel: string;
  totalMemGiB: number;
  kernel: string;
  loadAvgStart: number[];
  loadAvgEnd: number[];
  versions: Record<string, string>;
  bufferutil: boolean;
  /** GLIBC_TUNABLES of every bench process (bench/lib/ipc.ts); null = glibc's defaults. */
  mallocTunables?: string | null;
  /** The kernel's transparent-huge-page mode; null = not known. */
  hugePages?: string | null;
  /** Node flags of every bench process (bench/lib/ipc.ts `benchNodeFlags`). */
  nodeFlags?: string[];
  plan: Plan;
}

export interface Report {
  meta: RunMeta;
  sections: Partial<Record<SectionId, SectionOutcome>>;
  goals: Goal[];
  integrity: {
    verifiedChunks: number;
    verifiedBytes: number;
    verifiedResources: number;
    failures: string[];
  };
  /** True when no section failed and no byte was wrong. */
  ok: boolean;
  /** The verdict line's word and parenthesis (verdict.ts), with the exit code it implies. */
  verdict: Verdict;
}
