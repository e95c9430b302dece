/**
 * The `skill` Producer: pull-time re-authorization of a skill handle (D17: every
 * `client:get_blob` re-runs the sandbox against the registry). The handle only names the skill
 * and a rel_path; the package root comes from the registry again and the sandbox runs again, so
 * a handle is never an arbitrary file-read token. For a raw file the engine already holds a
 * descriptor for, the sandbox's facts are shown from that descriptor instead of a walk
 * (sandbox.ts `HeldSandbox`); whatever it cannot show goes through the full walk.
 *
 * D17 mapping: skill no longer registered, package root gone, or file deleted → `gone`; skill
 * orphaned, path now escapes (symlink), or now a forbidden file → `forbidden`.
 */
import type { DerivedStore, DeriveLimits } from "../blob/derived.ts";
import type { HandleFields, HeldFiles, Producer, ResolveResult } from "../contracts.ts";
import type { SandboxCheckCounter } from "../metrics.ts";
import { isSkillMd, lexSkillName, mimeForPath } from "./names.ts";
import type { SkillRegistry } from "./registry.ts";
import {
  HeldSandbox,
  lexRelPath,
  resolveLexed,
  type LexResult,
  type SandboxPolicy,
  type SandboxResult,
} from "./sandbox.ts";

/** `{n, p}` with nothing else, or `null` (→ `invalid_handle`). */
function fieldsOf(fields: HandleFields): { n: string; p: string } | null {
  const keys = Object.keys(fields);
  if (keys.length !== 2 || typeof fields.n !== "string" || typeof fields.p !== "string")
    return null;
  if (lexSkillName(fields.n) === null || fields.p === "") return null;
  return { n: fields.n, p: fields.p };
}

/** What a handle's fields say before any file is looked at: pure functions of the strings. */
interface ParsedFields {
  n: string;
  lexed: LexResult;
  /** The MIME type and SKILL.md-ness of the lexed path (when it lexed). */
  mimeType: string;
  skillMd: boolean;
}

function parse(fields: HandleFields): ParsedFields | null {
  const f = fieldsOf(fields);
  if (!f) return null;
  const lexed = lexRelPath(f.p);
  const relPath = lexed.ok ? lexed.relPath : "";
  return { n: f.n, lexed, mimeType: mimeForPath(relPath), skillMd: isSkillMd(relPath) };
}

/**
 * Parsed fields by record. The blob engine hands every pull of a handle the same frozen fields
 * object (computer/blob/handle.ts remembers opened handles), so each handle is parsed once; the
 * registry and the sandbox's file-system checks still run on every pull (D17).
 */
const parsedFields = new WeakMap<HandleFields, ParsedFields | null>();

function parsedOf(fields: HandleFields): ParsedFields | null {
  let parsed = parsedFields.get(fields);
  if (parsed === undefined) {
    parsed = parse(fields);
    if (Object.isFrozen(fields)) parsedFields.set(fields, parsed);
  }
  return parsed;
}

export function createSkillProducer(deps: {
  /** The registry the home's last scan built (its owner replaces it on each rebuild). */
  live: { readonly registry: SkillRegistry };
  /** Derived SKILL.md bodies (computer/blob/derived.ts). */
  derived: DerivedStore;
  /** `skillMdLimits(config)`: the hard cap and the in-memory tier. */
  limits: DeriveLimits;
  /** The sandbox's operator choices (`config`), re-applied at pull time. */
  policy?: SandboxPolicy;
  /** Counts each pull-time sandbox check by how it was answered (the Computer's metric). */
  sandboxChecks?: SandboxCheckCounter;
}): Producer {
  const heldSandbox = new HeldSandbox();
  const sandbox = (root: string, f: ParsedFields, held?: HeldFiles): SandboxResult => {
    if (!f.lexed.ok) return f.lexed;
    // A raw file the engine holds a descriptor for: the checks it proves need no walk.
    const fast = held && !f.skillMd ? heldSandbox.resolve(root, f.lexed, held) : undefined;
    if (fast) {
      deps.sandboxChecks?.inc({ path: "held" });
      return fast;
    }
    deps.sandboxChecks?.inc({ path: "walk" });
    const full = resolveLexed(root, f.lexed, deps.policy);
    heldSandbox.saw(root, full);
    return full;
  };
  const producer = {
    kind: "skill" as const,
    async resolve(
      raw: HandleFields,
      _ctx?: unknown,
      held?: HeldFiles,
    ): Promise<ResolveResult | null> {
      const f = parsedOf(raw);
      if (!f) return null;
      const found = await deps.live.registry.lookup(f.n);
      if (!found) return { ok: false, reason: "gone" };
      if (found.orphaned) return { ok: false, reason: "forbidden" };
      const sandboxed = sandbox(found.entry.root, f, held);
      if (!sandboxed.ok) {
        const gone = sandboxed.reason === "root_gone" || sandboxed.reason === "not_found";
        return { ok: false, reason: gone ? "gone" : "forbidden" };
      }
      const mimeType = f.mimeType;
      if (!f.skillMd) {
        // Raw file: the engine opens it, snapshots it and hashes it through its hash cache.
        // `canonical`: the engine re-checks the opened descriptor against this realpath (a race
        // between this sandbox check and the open must not escape the package).
        return {
          ok: true,
          source: { type: "file", path: sandboxed.target, mimeType, canonical: true },
        };
      }
      // SKILL.md: derived bytes (frontmatter stripped), produced once per content signature. A
      // body that grew past the hard cap since minting is "no longer servable" (gone).
      const got = await deps.derived.get(sandboxed.target, "skill-md", deps.limits);
      if (!got.ok) {
        // A disk fault of the derived store is said as such (D57): storage_full, storage_error.
        return { ok: false, reason: got.reason === "too_large" ? "gone" : got.reason };
      }
      return { ok: true, source: deps.derived.source(got.derived, mimeType) };
    },
  };
  return producer;
}
