/** Report blocks of sections 5–8 (filled in as those sections land). */
import type { SectionId } from "../lib/context.ts";
import type { Block } from "./doc.ts";
import type { Report } from "./types.ts";

export function otherBlocks(id: SectionId, d: unknown, _report: Report): Block[] {
  return [{ kind: "para", text: `${id}: ${JSON.stringify(d).slice(0, 2000)}` }];
}
