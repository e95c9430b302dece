/** The SKILL channel of the Computer (digest §3.3–§3.4, §5). */
export { createSkillService, type SkillService, type SkillServiceOptions } from "./service.ts";
export { ORPHAN_MARKER, MCP_SIDECAR } from "./registry.ts";
export { lexSkillName } from "./names.ts";
