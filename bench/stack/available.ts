/**
 * Whether the parts of the stack a section needs are in this tree. Sections that need a missing
 * part are reported as skipped (with the reason), never faked.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export const STACK_PARTS = {
  server: "server/server.ts",
  computer: "computer/computer.ts",
  agent: "agent/client.ts",
  pull: "agent/pull.ts",
} as const;

/** The missing files among `parts`, or an empty list when everything is there. */
export function missingParts(
  parts: ReadonlyArray<keyof typeof STACK_PARTS> = ["server", "computer", "agent", "pull"],
): string[] {
  return parts.map((p) => STACK_PARTS[p]).filter((f) => !existsSync(`${root}${f}`));
}
