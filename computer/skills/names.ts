/**
 * The skill name lexer (docs/protocol.md, SKILL channel). It runs before any registry lookup so
 * that a malformed name can never be turned into a file-system path (4016 before 4014).
 *
 *   1 segment   `<skill>`                    user drop-in
 *   2 segments  `<plugin>:<skill>`           marketplace
 *   3 segments  `mcp:<bundle_id>:<skill>`    MCP-staged (head MUST be the literal `mcp`)
 */

/** Strict kebab: `[a-z0-9-]`, 1–64 chars, no leading/trailing `-`, no `--`. */
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const KEBAB_MAX = 64;

/** An MCP bundle id, verbatim: `[A-Za-z0-9_-]+`, no `.`, no `__`, case preserved. */
const BUNDLE_ID = /^[A-Za-z0-9_-]+$/;

export function isKebabName(s: string): boolean {
  return s.length <= KEBAB_MAX && KEBAB.test(s);
}

export function isBundleId(s: string): boolean {
  return BUNDLE_ID.test(s) && !s.includes("__");
}

export type ParsedSkillName =
  | { kind: "user"; skill: string }
  | { kind: "marketplace"; plugin: string; skill: string }
  | { kind: "mcp"; bundleId: string; skill: string };

/** Lexes a wire skill name; `null` means 4016. Pure string work, no I/O. */
export function lexSkillName(name: string): ParsedSkillName | null {
  const parts = name.split(":");
  if (parts.length === 1) {
    const [skill] = parts as [string];
    return isKebabName(skill) ? { kind: "user", skill } : null;
  }
  if (parts.length === 2) {
    const [plugin, skill] = parts as [string, string];
    return isKebabName(plugin) && isKebabName(skill)
      ? { kind: "marketplace", plugin, skill }
      : null;
  }
  if (parts.length === 3) {
    const [head, bundleId, skill] = parts as [string, string, string];
    if (head !== "mcp") return null;
    return isBundleId(bundleId) && isKebabName(skill) ? { kind: "mcp", bundleId, skill } : null;
  }
  return null;
}
