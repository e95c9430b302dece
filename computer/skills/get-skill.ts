/**
 * `client:get_skills` and `client:get_skill` (docs/protocol.md, SKILL channel; D21–D23). The order
 * of checks is the protocol's: name lexer (4016) → registry (4014) → sandbox (4017 traversal /
 * forbidden / not_found) → resource bytes → hard cap (4017 too_large, no handle) → inline `body`
 * or a minted handle.
 */
import {
  busy,
  encodedAckBytes,
  invalidSkillName,
  isTextMime,
  skillNotFound,
  skillResourceNotAccessible,
  type ErrorPayload,
  type GetSkillReq,
  type GetSkillRet,
  type GetSkillsReq,
  type GetSkillsRet,
} from "@a2c-smcp/protocol";
import { posix, win32 } from "node:path";
import type { DerivedStore } from "../blob/derived.ts";
import { DEFAULT_SETTLE_MS } from "../blob/engine.ts";
import type { ComputerConfig, HandleMinter } from "../contracts.ts";
import type { SkillRegistry } from "./registry.ts";
import {
  openRegular,
  readAt,
  restat,
  signatureNow,
  skillMdLimits,
  type OpenedFile,
} from "./resource.ts";
import { DEFAULT_REL_PATH, type SkillHandleFields, type SkillSandbox } from "./sandbox.ts";

export interface SkillDeps {
  readonly config: ComputerConfig;
  readonly minter: HandleMinter;
  /** Derived SKILL.md bodies, shared with the `skill` producer. */
  readonly derived: DerivedStore;
  /** The current registry (replaced on every rebuild). */
  registry(): SkillRegistry;
  /** The check of a name and a rel_path, the same the `skill` producer runs on every pull. */
  readonly sandbox: Pick<SkillSandbox, "check">;
  /** The blob engine's hash cache: a file hashed at mint is not re-hashed at pull. */
  readonly fileHasher: FileHasher;
  /** The engine's settle window (default `DEFAULT_SETTLE_MS`): younger content is not recorded. */
  readonly settleMs?: number;
}

/** `HashCache` of `computer/blob/hash-cache.ts` (same signature format). */
export interface FileHasher {
  fileSha256(fd: number, signature: string, size: number): Promise<string | null>;
  fileBytesSha256(signature: string | null, bytes: Buffer): string;
}

export async function getSkills(req: GetSkillsReq, deps: SkillDeps): Promise<GetSkillsRet> {
  // Orphans are dropped; refs never carry bodies (docs/protocol.md, SKILL channel).
  return { skills: await deps.registry().refs(), req_id: req.req_id };
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** UTF-8 text or `null`; `ignoreBOM` keeps a BOM in the string so sha256(utf8(body)) matches. */
function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * `details.rel_path` of a 4017: the raw requested value (optional and diagnostic), but
 * never an absolute path (POSIX `/…`, or Windows `\\…`, `C:\…`): an error must not carry
 * anything that reads like a real path on some machine (D23), so those are left out.
 */
function echoRelPath(raw: string | undefined): string | undefined {
  if (raw === undefined || posix.isAbsolute(raw) || win32.isAbsolute(raw)) return undefined;
  return raw;
}

/** 4017 too_large: the size, and the cap it is over. */
function tooLarge(req: GetSkillReq, size: number, maxSize: number): ErrorPayload {
  return skillResourceNotAccessible("too_large", echoRelPath(req.rel_path), size, maxSize);
}

/**
 * sha256 of a small text file read whole. The digest is recorded in the engine's cache for the
 * file's content signature when that signature held across the read and is old enough to trust
 * (the engine's settle rule, engine.ts), so a handle minted for it (not valid UTF-8, or an ack
 * too big to inline) is pulled without hashing the same bytes again.
 */
function inlineDigest(file: OpenedFile, bytes: Buffer, deps: SkillDeps): string {
  const ageMs = Date.now() - Number(file.ctimeNs / 1_000_000n);
  const settled = ageMs >= (deps.settleMs ?? DEFAULT_SETTLE_MS);
  const stable = bytes.length === file.size && settled && signatureNow(file) === file.key;
  return deps.fileHasher.fileBytesSha256(stable ? file.key : null, bytes);
}

/** Hashes before a file that keeps changing is answered `busy` (try again later). */
const HASH_ATTEMPTS = 5;

type Resource = { totalSize: number; sha256: string; bytes?: Buffer } | ErrorPayload;

/**
 * Size, sha256 and (when small enough to inline) the bytes of the SKILL.md body at `target`:
 * the derived resource the `skill` producer serves, so mint and pull agree on one digest.
 */
async function skillMdResource(
  target: string,
  req: GetSkillReq,
  deps: SkillDeps,
): Promise<Resource> {
  const got = await deps.derived.get(target, "skill-md", skillMdLimits(deps.config));
  if (!got.ok) {
    if (got.reason === "too_large") {
      return tooLarge(req, got.size, deps.config.maxSize);
    }
    // The body could not be stored for a disk fault: said as such, not as a missing file (D57).
    if (got.reason === "storage_full" || got.reason === "storage_error") {
      return skillResourceNotAccessible(got.reason, echoRelPath(req.rel_path));
    }
    return skillResourceNotAccessible("not_found", echoRelPath(req.rel_path));
  }
  const d = got.derived;
  const out: Resource = { totalSize: d.size, sha256: d.sha256 };
  if ("bytes" in d) out.bytes = d.bytes;
  return out;
}

/** Size, sha256 and (small text) the bytes of a raw file at `target`. */
async function rawResource(
  target: string,
  req: GetSkillReq,
  text: boolean,
  deps: SkillDeps,
): Promise<Resource> {
  const { config } = deps;
  const file = await openRegular(target);
  if (!file) return skillResourceNotAccessible("not_found", echoRelPath(req.rel_path));
  try {
    for (let attempt = 0; attempt < HASH_ATTEMPTS; attempt++) {
      // The hard cap is checked before the whole resource is read or hashed.
      if (file.size > config.maxSize) {
        return tooLarge(req, file.size, config.maxSize);
      }
      if (text && file.size <= config.inlineBudget) {
        const bytes = await readAt(file.fh, 0, file.size);
        return { totalSize: bytes.length, sha256: inlineDigest(file, bytes, deps), bytes };
      }
      // The engine's cache (and pool for big files): a handle minted here is pulled without
      // hashing the same content again (one hash per content, D18).
      const sha256 = await deps.fileHasher.fileSha256(file.fh.fd, file.key, file.size);
      if (sha256 !== null) return { totalSize: file.size, sha256 };
      restat(file); // changed while hashed: again with the new content
    }
    return busy("The file keeps changing; retry later");
  } finally {
    await file.fh.close();
  }
}

export async function getSkill(
  req: GetSkillReq,
  deps: SkillDeps,
): Promise<GetSkillRet | ErrorPayload> {
  const { config } = deps;
  // 1–3. The sandbox's check (sandbox.ts): the name lexer (4016), the registry, unknown or
  // orphaned → 4014 (D22), then the rel_path; details.rel_path is the raw requested value
  // unless absolute (echoRelPath).
  const file = await deps.sandbox.check(req.name, req.rel_path);
  if (file === null) return invalidSkillName(req.name);
  if (!file.ok) {
    if (file.reason === "unknown" || file.reason === "orphaned" || file.reason === "root_gone") {
      return skillNotFound(req.name);
    }
    return skillResourceNotAccessible(file.reason, echoRelPath(req.rel_path));
  }
  const mime = file.mimeType;
  const text = isTextMime(mime);
  // 4–5. Resource bytes and the hard cap.
  const resource = file.skillMd
    ? await skillMdResource(file.target, req, deps)
    : await rawResource(file.target, req, text, deps);
  if ("code" in resource) return resource;
  const { totalSize, sha256, bytes } = resource;
  const base = {
    name: req.name,
    // Echo; "SKILL.md" when the request omitted it (or sent "", D21).
    rel_path: req.rel_path === undefined || req.rel_path === "" ? DEFAULT_REL_PATH : req.rel_path,
    mime_type: mime,
    total_size: totalSize,
    sha256,
  };
  // 6. Inline only text, within the budget, valid UTF-8, and only if the ack fits the Server's
  // buffer (D16: JSON escaping can grow a body well past its byte length).
  if (text && bytes !== undefined && totalSize <= config.inlineBudget) {
    const body = decodeUtf8(bytes);
    if (body !== null) {
      const ret: GetSkillRet = { ...base, body, req_id: req.req_id };
      if (encodedAckBytes(ret) <= config.maxHttpBufferSize) return ret;
    }
  }
  const fields: SkillHandleFields = { n: req.name, p: file.relPath };
  return { ...base, blob_handle: deps.minter.mint("skill", fields), req_id: req.req_id };
}
