/**
 * What every goal file (goals.ts, goals-links.ts, goals-upload.ts) shares: a section's data when
 * it ran, the reason when it did not, and the goal that says so.
 */
import type { SectionOutcome } from "./lib/context.ts";
import type { Goal } from "./report/types.ts";

/** The section's data when it ran to the end, else null. */
export function sectionData<T>(o: SectionOutcome | undefined): T | null {
  return o?.status === "done" ? (o.data as T) : null;
}

/** Why `section` has no data in this run ("" when it has). */
export function absentWhy(o: SectionOutcome | undefined, section: string): string {
  if (!o) return `section ${section} was not run (--only).`;
  if (o.status === "skipped") return `section ${section} skipped: ${o.reason}`;
  if (o.status === "failed") return `section ${section} failed: ${o.error}`;
  return "";
}

/** A goal whose data is missing from this run, with the reason. */
export function notMeasured(id: string, text: string, why: string): Goal {
  return { id, text, status: "not measured", measured: "–", evidence: "", why };
}

/** A measured goal: met or missed, and why when missed. */
export function judged(g: {
  id: string;
  text: string;
  met: boolean;
  measured: string;
  evidence: string;
  why: string;
}): Goal {
  const { met, why, ...rest } = g;
  return {
    id: rest.id,
    text: rest.text,
    status: met ? "met" : "missed",
    measured: rest.measured,
    evidence: rest.evidence,
    ...(met ? {} : { why }),
  };
}
