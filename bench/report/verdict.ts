/**
 * The run's verdict, one line for the console and the report's header. Four words:
 * - FAIL: a section failed or a byte did not match its sha256 (exit code 1);
 * - PARTIAL: nothing failed, but some goals were not measured (`--only`, a skipped section);
 * - MISSED: every goal was measured and at least one was missed;
 * - PASS: every goal was measured and met.
 * Only FAIL exits non-zero: the exit code says whether the run itself is sound (what CI checks);
 * the word and its parenthesis say what it showed. A quick run says so, its speeds being a smoke
 * test of the sections, not a measurement.
 */
import type { Goal } from "./types.ts";

export type VerdictStatus = "PASS" | "PARTIAL" | "MISSED" | "FAIL";

export interface Verdict {
  status: VerdictStatus;
  /** The parenthesis: goals measured and met, which were not measured or missed, failures. */
  detail: string;
  exitCode: 0 | 1;
}

export interface VerdictInput {
  goals: readonly Goal[];
  failedSections: readonly string[];
  integrityFailures: number;
  quick: boolean;
}

export function verdictOf(r: VerdictInput): Verdict {
  const total = r.goals.length;
  const measured = r.goals.filter((g) => g.status !== "not measured");
  const met = measured.filter((g) => g.status === "met");
  const missed = measured.filter((g) => g.status === "missed");
  const unmeasured = r.goals.filter((g) => g.status === "not measured");
  const parts: string[] = [];
  if (r.integrityFailures > 0) parts.push(`${r.integrityFailures} integrity failure(s)`);
  if (r.failedSections.length > 0) parts.push(`failed sections: ${r.failedSections.join(", ")}`);
  if (measured.length === total) parts.push(`${met.length} of ${total} goals met`);
  else if (measured.length === 0) parts.push(`0 of ${total} goals measured`);
  else
    parts.push(
      `${measured.length} of ${total} goals measured, ${missed.length === 0 ? "all met" : `${met.length} met`}`,
    );
  if (missed.length > 0) parts.push(`missed: ${missed.map((g) => g.id).join(", ")}`);
  if (unmeasured.length > 0) parts.push(`not measured: ${unmeasured.map((g) => g.id).join(", ")}`);
  if (r.quick) parts.push("quick run: speeds are a smoke test, not a measurement");
  const failed = r.integrityFailures > 0 || r.failedSections.length > 0;
  const status: VerdictStatus = failed
    ? "FAIL"
    : unmeasured.length > 0
      ? "PARTIAL"
      : missed.length > 0
        ? "MISSED"
        : "PASS";
  return { status, detail: parts.join("; "), exitCode: failed ? 1 : 0 };
}

/** `bench: PARTIAL (3 of 5 goals measured, all met; not measured: …)`. */
export function verdictLine(v: Verdict): string {
  return `bench: ${v.status} (${v.detail})`;
}
