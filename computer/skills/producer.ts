/**
 * The `skill` Producer: pull-time re-authorization of a skill handle (blob-transfer §2 steps 2–3;
 * digest §5.4 "every client:get_blob MUST re-run this whole sandbox against the Registry";
 * DECISIONS D17). The handle only names the skill and a rel_path; the package root comes from the
 * registry again and the sandbox runs again, so a handle is never an arbitrary file-read token.
 *
 * D17 mapping: skill no longer registered, package root gone, or file deleted → `gone`; skill
 * orphaned, path now escapes (symlink), or now a forbidden file → `forbidden`.
 */
import type { HandleFields, Producer, ResolveResult } from "../contracts.ts";
import { mimeForPath } from "./mime.ts";
import { lexSkillName } from "./names.ts";
import type { SkillRegistry } from "./registry.ts";
import {
  frontmatterLength,
  isSkillMd,
  openRegular,
  skillMdBody,
  type ContentCache,
} from "./resource.ts";
import { resolveInPackage, type SandboxPolicy } from "./sandbox.ts";

/** `{n, p}` with nothing else, or `null` (→ `invalid_handle`). */
function fieldsOf(fields: HandleFields): { n: string; p: string } | null {
  const keys = Object.keys(fields);
  if (keys.length !== 2 || typeof fields.n !== "string" || typeof fields.p !== "string")
    return null;
  if (lexSkillName(fields.n) === null || fields.p === "") return null;
  return { n: fields.n, p: fields.p };
}

export function createSkillProducer(deps: {
  registry(): SkillRegistry;
  cache: ContentCache;
  /** The hard cap (`config.maxSize`), re-checked for in-memory SKILL.md bodies. */
  maxSize: number;
  /** The sandbox's operator choices (`config`), re-applied at pull time. */
  policy?: SandboxPolicy;
}): Producer {
  return {
    kind: "skill",
    async resolve(raw: HandleFields): Promise<ResolveResult | null> {
      const f = fieldsOf(raw);
      if (!f) return null;
      const found = await deps.registry().lookup(f.n);
      if (!found) return { ok: false, reason: "gone" };
      if (found.orphaned) return { ok: false, reason: "forbidden" };
      const sandboxed = await resolveInPackage(found.entry.root, f.p, deps.policy);
      if (!sandboxed.ok) {
        const gone = sandboxed.reason === "root_gone" || sandboxed.reason === "not_found";
        return { ok: false, reason: gone ? "gone" : "forbidden" };
      }
      const mimeType = mimeForPath(sandboxed.relPath);
      if (!isSkillMd(sandboxed.relPath)) {
        // Raw file: the engine opens it, snapshots it and hashes it through its hash cache.
        // `canonical`: the engine re-checks the opened descriptor against this realpath (a race
        // between this sandbox check and the open must not escape the package).
        return {
          ok: true,
          source: { type: "file", path: sandboxed.target, mimeType, canonical: true },
        };
      }
      // SKILL.md: derived bytes (frontmatter stripped), hashed here, cached by file signature so
      // each chunk costs an fstat, not a re-read.
      const file = await openRegular(sandboxed.target);
      if (!file) return { ok: false, reason: "gone" };
      try {
        // A SKILL.md that grew past the hard cap since minting is "no longer servable" (gone):
        // it would otherwise be read whole into memory for every chunk.
        if (file.size - (await frontmatterLength(file)) > deps.maxSize) {
          return { ok: false, reason: "gone" };
        }
        const { bytes, sha256 } = await skillMdBody(file, deps.cache);
        return { ok: true, source: { type: "bytes", bytes, mimeType, sha256 } };
      } finally {
        await file.fh.close();
      }
    },
  };
}
