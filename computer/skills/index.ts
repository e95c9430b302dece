/** The SKILL channel of the Computer (docs/protocol.md, SKILL channel). */
export { createSkillService, type SkillService, type SkillServiceOptions } from "./service.ts";
export { ORPHAN_MARKER, MCP_SIDECAR } from "./registry.ts";
export { lexSkillName } from "./sandbox.ts";
