/**
 * The SKILL producer's Agent half (docs/protocol.md §7.5): "Agent SHOULD verify
 * sha256(utf8(body)) or, on the handle path, verify after eof". An inline `body` is checked
 * against `sha256` and `total_size`; a text handle is drained with the pull (which verifies every
 * byte against the producer's sha256 and size, and refuses a size over its `maxBytes` before
 * pulling anything, D45), decoded as UTF-8 and returned as `body`; a binary handle is left for
 * the caller to pull.
 */
import { constants as bufferConstants } from "node:buffer";
import { createHash } from "node:crypto";
import { isTextMime, type GetSkillRet } from "@a2c-smcp/protocol";
import { BlobTooLargeError, IntegrityError } from "./errors.ts";
import type { PullOptions } from "./pull.ts";

export { isTextMime };

/** Verifies an inline body, or drains a text handle into `body`. */
export async function drainSkill(
  ret: GetSkillRet,
  read: (handle: string, opts: PullOptions) => Promise<Buffer>,
): Promise<GetSkillRet> {
  if (ret.body !== undefined) {
    const bytes = Buffer.from(ret.body, "utf8");
    const sha = createHash("sha256").update(bytes).digest("hex");
    if (sha !== ret.sha256 || bytes.length !== ret.total_size) {
      throw new IntegrityError(
        `skill '${ret.name}' ${ret.rel_path}: inline body does not match its sha256/total_size`,
        ret.sha256,
        sha,
      );
    }
    return ret;
  }
  if (ret.blob_handle === undefined || !isTextMime(ret.mime_type)) return ret;
  // UTF-8 takes at most 3 bytes for each UTF-16 unit of a string: more than that many bytes
  // cannot be one string, whatever the text.
  const mostBytes = 3 * bufferConstants.MAX_STRING_LENGTH;
  if (ret.total_size > mostBytes) throw new BlobTooLargeError(ret.total_size, mostBytes, "string");
  const bytes = await read(ret.blob_handle, {
    expectedSha256: ret.sha256,
    expectedSize: ret.total_size,
  });
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  let body: string;
  try {
    body = decoder.decode(bytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_STRING_TOO_LONG") {
      throw new BlobTooLargeError(bytes.length, bufferConstants.MAX_STRING_LENGTH, "string");
    }
    // Verified bytes that are not UTF-8: keep the handle, the caller may want the raw bytes.
    return ret;
  }
  const { blob_handle: _handle, ...rest } = ret;
  return { ...rest, body };
}
