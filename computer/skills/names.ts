/**
 * What a name says before any file is looked at (pure string work, no I/O): a skill's name, a
 * path's MIME type, whether a path is a SKILL.md. A get_skill answer and a pull's handle are read
 * with the same rules.
 *
 * The skill name lexer (docs/protocol.md, SKILL channel) runs before any registry lookup so that
 * a malformed name can never be turned into a file-system path (4016 before 4014).
 *
 *   1 segment   `<skill>`                    user drop-in
 *   2 segments  `<plugin>:<skill>`           marketplace
 *   3 segments  `mcp:<bundle_id>:<skill>`    MCP-staged (head MUST be the literal `mcp`)
 *
 * MIME inference is deterministic (docs/protocol.md, SKILL channel): a built-in extension table,
 * never the host's registry, so the same resource has the same MIME on every OS. Matching is on
 * the last extension of the basename, case-insensitive; no extension, a dotfile without another
 * dot, or an unknown extension → `application/octet-stream` (binary → always a handle).
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

const TABLE: Readonly<Record<string, string>> = {
  // Mandated by the protocol.
  md: "text/markdown",
  markdown: "text/markdown",
  txt: "text/plain",
  json: "application/json",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
  toml: "application/toml",
  rst: "text/x-rst",
  // Common text in skill packages (scripts, data, web).
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  js: "application/javascript",
  mjs: "application/javascript",
  cjs: "application/javascript",
  ts: "text/x-typescript",
  py: "text/x-python",
  sh: "text/x-shellscript",
  bash: "text/x-shellscript",
  rb: "text/x-ruby",
  go: "text/x-go",
  rs: "text/x-rust",
  java: "text/x-java",
  c: "text/x-c",
  h: "text/x-c",
  cpp: "text/x-c++",
  sql: "text/x-sql",
  ini: "text/plain",
  cfg: "text/plain",
  log: "text/plain",
  svg: "image/svg+xml",
  // Binary.
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  bmp: "image/bmp",
  ico: "image/vnd.microsoft.icon",
  tif: "image/tiff",
  tiff: "image/tiff",
  avif: "image/avif",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  tgz: "application/gzip",
  tar: "application/x-tar",
  bz2: "application/x-bzip2",
  xz: "application/x-xz",
  "7z": "application/x-7z-compressed",
  wav: "audio/wav",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  flac: "audio/flac",
  m4a: "audio/mp4",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
  wasm: "application/wasm",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  bin: "application/octet-stream",
};

export const DEFAULT_MIME = "application/octet-stream";

/** MIME of a file by its basename (`SKILL.md` → `text/markdown` through the `.md` entry). */
export function mimeForPath(relPath: string): string {
  const base = relPath.slice(relPath.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return DEFAULT_MIME; // no extension, or a dotfile such as `.env`
  return TABLE[base.slice(dot + 1).toLowerCase()] ?? DEFAULT_MIME;
}

/** A package's SKILL.md (served as a derived resource: its frontmatter removed, D21). */
export function isSkillMd(relPath: string): boolean {
  return relPath === "SKILL.md" || relPath.endsWith("/SKILL.md");
}

/** The "text MIME" rule lives in protocol/ (the Agent applies the same rule). */
export { isTextMime } from "@a2c-smcp/protocol";
