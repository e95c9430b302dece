/**
 * `SKILL.md` frontmatter: finding the fences in bytes (for the served body, D21), and parsing the
 * six marketplace v1 fields with the `yaml` package (docs/protocol.md, SKILL channel).
 *
 * Fence rule (D21): the file's FIRST line is a fence, and the frontmatter ends
 * at the next fence line. A fence line is `---` once surrounding spaces, tabs and a trailing `\r`
 * are ignored (so CRLF files work); a UTF-8 BOM before the first fence is accepted. Everything
 * after the closing fence line's newline is the body, untrimmed. No opening fence, or no closing
 * fence within the first `MAX_FRONTMATTER_BYTES`, means "no frontmatter": the bytes are served
 * unchanged (and the registry refuses such a package, since `name`/`description` are mandatory).
 */
import { parseDocument } from "yaml";

/** The closing fence must appear within this many bytes; bounds the work for a hostile file. */
export const MAX_FRONTMATTER_BYTES = 256 * 1024;

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

function isFenceLine(buf: Buffer, start: number, end: number): boolean {
  let a = start;
  let b = end;
  while (a < b && (buf[a] === 0x20 || buf[a] === 0x09)) a++;
  while (b > a && (buf[b - 1] === 0x20 || buf[b - 1] === 0x09 || buf[b - 1] === 0x0d)) b--;
  return b - a === 3 && buf[a] === 0x2d && buf[a + 1] === 0x2d && buf[a + 2] === 0x2d;
}

export interface FrontmatterSplit {
  /** The YAML text between the fences (raw bytes). */
  yaml: Buffer;
  /** Offset of the first body byte (= length of the stripped prefix). */
  bodyStart: number;
}

/**
 * Locates the frontmatter in `head`: the whole file, or its first `MAX_FRONTMATTER_BYTES + 1`
 * bytes (both give the same answer: the closing fence line must end, newline or end of file, at or
 * before byte `MAX_FRONTMATTER_BYTES`). `null` = no frontmatter.
 */
export function splitFrontmatter(head: Buffer): FrontmatterSplit | null {
  const limit = Math.min(head.length, MAX_FRONTMATTER_BYTES);
  let pos = head.subarray(0, 3).equals(BOM) ? 3 : 0;
  let nl = head.indexOf(0x0a, pos);
  if (nl < 0 || nl > limit || !isFenceLine(head, pos, nl)) return null;
  const yamlStart = nl + 1;
  pos = yamlStart;
  while (pos <= limit) {
    nl = head.indexOf(0x0a, pos);
    const lineEnd = nl < 0 ? head.length : nl;
    if (lineEnd > limit) return null;
    if (isFenceLine(head, pos, lineEnd)) {
      return { yaml: head.subarray(yamlStart, pos), bodyStart: nl < 0 ? head.length : nl + 1 };
    }
    if (nl < 0) return null;
    pos = nl + 1;
  }
  return null;
}

/** The served bytes of a file whose basename is `SKILL.md`: frontmatter removed (D21). */
export function stripFrontmatter(bytes: Buffer): Buffer {
  const split = splitFrontmatter(bytes);
  return split ? bytes.subarray(split.bodyStart) : bytes;
}

/** The six marketplace v1 fields and 0.4.0's `tags`, normalized for an `A2CSkillRef`. */
export interface SkillFrontmatter {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  allowedTools?: string[];
  metadata?: Record<string, unknown>;
  /** `tags`, passed through to `A2CSkillRef.tags` (protocol 0.4.0). */
  tags?: string[];
}

export type FrontmatterResult =
  { ok: true; value: SkillFrontmatter; warnings: string[] } | { ok: false; error: string };

/**
 * `allowed-tools` normalization (our rule; the protocol leaves it open): a YAML list keeps its string items
 * in order; a string is split on commas and whitespace that are NOT inside parentheses, so both
 * `Read, Grep` and `Bash(git add:*) Read` work (`Bash(git add:*)` stays one tool). Items are
 * trimmed; empty items are dropped; non-string list items are dropped with a warning.
 */
export function normalizeAllowedTools(raw: unknown, warnings: string[]): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (Array.isArray(raw)) {
    const out: string[] = [];
    for (const item of raw) {
      if (typeof item === "string") {
        const t = item.trim();
        if (t) out.push(t);
      } else warnings.push("allowed-tools: non-string item dropped");
    }
    return out;
  }
  if (typeof raw !== "string") {
    warnings.push("allowed-tools: neither a string nor a list, ignored");
    return undefined;
  }
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of raw) {
    if (ch === "(") depth++;
    else if (ch === ")" && depth > 0) depth--;
    if (depth === 0 && (ch === "," || /\s/.test(ch))) {
      if (cur) out.push(cur);
      cur = "";
    } else cur += ch;
  }
  if (cur) out.push(cur);
  return out;
}

function optionalString(
  doc: Record<string, unknown>,
  key: string,
  warnings: string[],
): string | undefined {
  const v = doc[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v;
  warnings.push(`${key}: not a string, ignored`);
  return undefined;
}

/** Parses the YAML between the fences. Mandatory fields are strict; optional ones are lenient. */
export function parseFrontmatter(yamlBytes: Buffer): FrontmatterResult {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(yamlBytes);
  } catch {
    return { ok: false, error: "frontmatter is not valid UTF-8" };
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    return { ok: false, error: `frontmatter is not valid YAML: ${doc.errors[0]?.message ?? ""}` };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 50 });
  } catch (err) {
    return { ok: false, error: `frontmatter is not valid YAML: ${(err as Error).message}` };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { ok: false, error: "frontmatter is not a YAML mapping" };
  }
  const map = data as Record<string, unknown>;
  const warnings: string[] = [];
  if (typeof map.name !== "string" || map.name === "") {
    return { ok: false, error: "frontmatter `name` is missing or not a string" };
  }
  if (typeof map.description !== "string" || map.description.trim() === "") {
    return { ok: false, error: "frontmatter `description` is missing, empty or not a string" };
  }
  const value: SkillFrontmatter = { name: map.name, description: map.description };
  const license = optionalString(map, "license", warnings);
  if (license !== undefined) value.license = license;
  const compatibility = optionalString(map, "compatibility", warnings);
  if (compatibility !== undefined) value.compatibility = compatibility;
  const tools = normalizeAllowedTools(map["allowed-tools"], warnings);
  if (tools !== undefined) value.allowedTools = tools;
  // 0.4.0: a list of strings passes through as is; anything else leaves the field out.
  const tags = map.tags;
  if (Array.isArray(tags) && tags.every((t) => typeof t === "string")) value.tags = tags;
  else if (tags !== undefined && tags !== null)
    warnings.push("tags: not a list of strings, ignored");
  const meta = map.metadata;
  if (meta !== undefined && meta !== null) {
    if (typeof meta === "object" && !Array.isArray(meta)) {
      value.metadata = meta as Record<string, unknown>;
    } else warnings.push("metadata: not a mapping, ignored");
  }
  return { ok: true, value, warnings };
}
