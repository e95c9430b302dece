/**
 * The demo skill home the stack serves, generated fresh on every run (the D20 layout):
 *
 *   <home>/user/hello/SKILL.md               inline SKILL.md (frontmatter stripped on the wire)
 *   <home>/user/hello/references/notes.txt   small text  → inline `body`
 *   <home>/user/hello/references/guide.md    text over the inline budget → handle, drained to text
 *   <home>/user/media/SKILL.md
 *   <home>/user/media/assets/logo.png        a real PNG (binary MIME → always a handle)
 *   <home>/user/media/assets/big.bin         the big file (64 MiB by default)
 *   <home>/user/media/.skillenv              a secret: must be unreadable (4017 forbidden)
 *   <home>/user/scratch/SKILL.md
 *   <home>/user/scratch/data/rewrite.bin     rewritten while an Agent pulls it
 *   <home>/marketplace/demo-market/toolbox/review/SKILL.md   two-segment name `toolbox:review`
 *
 * The manifest records the size and sha256 of every resource as the generator wrote it, so the
 * scenarios verify bytes against the source of truth, not against what the Computer claims.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { StdioCommand } from "../demo/mcp-command.ts";
import { makePng } from "../demo/png.ts";

export interface DemoFile {
  /** Skill name as the Agent addresses it. */
  skill: string;
  rel_path: string;
  /** Absolute path on the Computer's host. */
  path: string;
  /** Resource bytes (for SKILL.md: the body after the frontmatter). */
  size: number;
  sha256: string;
  mime: string;
}

export interface DemoManifest {
  home: string;
  /** Skill names get_skills must list. */
  skills: string[];
  files: {
    skillMd: DemoFile;
    notes: DemoFile;
    guide: DemoFile;
    logo: DemoFile;
    big: DemoFile;
    rewrite: DemoFile;
    skillenv: DemoFile;
  };
  /** The `.skillenv` secret value: it must never appear in any answer. */
  secret: string;
}

export interface DemoOptions {
  /** Size of `big.bin` in bytes (64 MiB by default). */
  bigSize?: number;
  /** Size of `rewrite.bin` in bytes. */
  rewriteSize?: number;
}

export const DEFAULT_BIG_SIZE = 64 * 1024 * 1024;
const WRITE_CHUNK = 1024 * 1024;

function sha256(buf: Buffer | string): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** Writes `size` random bytes to `path` in 1 MiB pieces; returns their sha256. */
export function writeRandomFile(path: string, size: number): string {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`bad file size ${size}`);
  const hash = createHash("sha256");
  const fd = openSync(path, "w", 0o600);
  try {
    for (let done = 0; done < size;) {
      const piece = randomBytes(Math.min(WRITE_CHUNK, size - done));
      writeSync(fd, piece);
      hash.update(piece);
      done += piece.length;
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

/**
 * Replaces `path` with new random content the way editors save: write a sibling, then rename
 * over the original (a new inode; a reader never sees a half-written file). Returns the new
 * sha256.
 */
export function rewriteFileAtomically(path: string, size: number): string {
  const tmp = `${path}.tmp-${process.pid}`;
  const digest = writeRandomFile(tmp, size);
  renameSync(tmp, path);
  return digest;
}

function skillMd(name: string, description: string, body: string): { text: string; body: string } {
  // JSON strings are valid YAML scalars: a description may contain ": " safely.
  return {
    text: `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n${body}`,
    body,
  };
}

function guideText(minBytes: number): string {
  const lines: string[] = ["# Field guide", ""];
  let size = 0;
  for (let i = 1; size < minBytes; i++) {
    const line = `${i}. Pull big things by handle, verify the sha256, and never splice two versions.`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n") + "\n";
}

/** Generates the demo home under `home` (created 0700) and returns its manifest. */
export function generateDemoHome(home: string, opts: DemoOptions = {}): DemoManifest {
  const bigSize = opts.bigSize ?? DEFAULT_BIG_SIZE;
  const rewriteSize =
    opts.rewriteSize ?? Math.min(16 * 1024 * 1024, Math.max(Math.floor(bigSize / 4), 1));
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const dir = (...parts: string[]): string => {
    const p = join(home, ...parts);
    mkdirSync(p, { recursive: true, mode: 0o700 });
    return p;
  };
  const text = (
    skill: string,
    path: string,
    relPath: string,
    content: string,
    mime: string,
  ): DemoFile => {
    writeFileSync(path, content, { mode: 0o600 });
    return {
      skill,
      rel_path: relPath,
      path,
      size: Buffer.byteLength(content),
      sha256: sha256(content),
      mime,
    };
  };

  // hello: inline SKILL.md, a small text and a text over the 32 KiB inline budget.
  const hello = dir("user", "hello");
  dir("user", "hello", "references");
  const helloMd = skillMd(
    "hello",
    "Greets the stack and points at its references.",
    "# Hello\n\nRead `references/notes.txt` first, then `references/guide.md`.\n",
  );
  writeFileSync(join(hello, "SKILL.md"), helloMd.text, { mode: 0o600 });
  const skillMdFile: DemoFile = {
    skill: "hello",
    rel_path: "SKILL.md",
    path: join(hello, "SKILL.md"),
    size: Buffer.byteLength(helloMd.body),
    sha256: sha256(helloMd.body),
    mime: "text/markdown",
  };
  const notes = text(
    "hello",
    join(hello, "references", "notes.txt"),
    "references/notes.txt",
    "Small text travels inline as `body`.\n",
    "text/plain",
  );
  const guide = text(
    "hello",
    join(hello, "references", "guide.md"),
    "references/guide.md",
    guideText(96 * 1024),
    "text/markdown",
  );

  // media: a PNG, the big file and a secret.
  const media = dir("user", "media");
  dir("user", "media", "assets");
  writeFileSync(
    join(media, "SKILL.md"),
    skillMd("media", "Binary assets: a logo and a big data file.", "# Media\n").text,
    { mode: 0o600 },
  );
  const png = makePng(480, 360, 7);
  const logoPath = join(media, "assets", "logo.png");
  writeFileSync(logoPath, png, { mode: 0o600 });
  const logo: DemoFile = {
    skill: "media",
    rel_path: "assets/logo.png",
    path: logoPath,
    size: png.length,
    sha256: sha256(png),
    mime: "image/png",
  };
  const bigPath = join(media, "assets", "big.bin");
  const big: DemoFile = {
    skill: "media",
    rel_path: "assets/big.bin",
    path: bigPath,
    size: bigSize,
    sha256: writeRandomFile(bigPath, bigSize),
    mime: "application/octet-stream",
  };
  const secret = `sk-demo-${randomBytes(16).toString("hex")}`;
  const skillenv = text(
    "media",
    join(media, ".skillenv"),
    ".skillenv",
    `DEMO_API_KEY=${secret}\n`,
    "application/octet-stream",
  );

  // scratch: the file a scenario rewrites while pulling it.
  const scratch = dir("user", "scratch");
  dir("user", "scratch", "data");
  writeFileSync(
    join(scratch, "SKILL.md"),
    skillMd("scratch", "A data file that changes while you read it.", "# Scratch\n").text,
    { mode: 0o600 },
  );
  const rewritePath = join(scratch, "data", "rewrite.bin");
  const rewrite: DemoFile = {
    skill: "scratch",
    rel_path: "data/rewrite.bin",
    path: rewritePath,
    size: rewriteSize,
    sha256: writeRandomFile(rewritePath, rewriteSize),
    mime: "application/octet-stream",
  };

  // A marketplace skill, to show the two-segment name.
  const review = dir("marketplace", "demo-market", "toolbox", "review");
  writeFileSync(
    join(review, "SKILL.md"),
    skillMd("review", "Reviews a change (marketplace layout).", "# Review\n").text,
    { mode: 0o600 },
  );

  return {
    home,
    skills: ["hello", "media", "scratch", "toolbox:review"],
    files: { skillMd: skillMdFile, notes, guide, logo, big, rewrite, skillenv },
    secret,
  };
}

/**
 * MCP config (the Computer's `A2C_MCP_CONFIG`) that runs the demo MCP server over stdio under
 * bundle_id `demo`, so its tools are exposed as `demo__<tool>` (scripts/demo/mcp-command.ts says
 * how `server` runs it).
 */
export function writeDemoMcpConfig(file: string, server: StdioCommand): void {
  writeFileSync(file, JSON.stringify({ mcpServers: { demo: server } }, null, 2));
}
