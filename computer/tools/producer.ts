/**
 * The tool-call blob producer (D24): handles minted for sidebanded
 * tool-result items carry the blob's content id and MIME type; resolving one re-checks both and
 * points the engine at the spool file. The sha256 is the content id itself: the engine checks the
 * file against it once per content signature and serves it only while it holds that content.
 */
import type { HandleFields, HandleMinter, Producer, ResolveResult } from "../contracts.ts";
import { LIMITS } from "@a2c-smcp/protocol";
import { type BlobSpool, isCid } from "./spool.ts";

/** MIME used when a content item declares none. */
export const DEFAULT_BLOB_MIME = "application/octet-stream";

/** A MIME string we are willing to echo: bounded, printable ASCII. */
export function isSafeMime(mime: unknown): mime is string {
  return (
    typeof mime === "string" &&
    mime.length > 0 &&
    mime.length <= LIMITS.mime &&
    /^[\x20-\x7e]+$/.test(mime)
  );
}

export function mintToolHandle(minter: HandleMinter, cid: string, mime: string): string {
  return minter.mint("tool", { cid, mime });
}

export function createToolProducer(spool: BlobSpool): Producer {
  return {
    kind: "tool",
    async resolve(fields: HandleFields): Promise<ResolveResult | null> {
      const { cid, mime } = fields;
      // Fields of another shape are not ours: invalid_handle. Never build a path from them.
      if (!isCid(cid) || !isSafeMime(mime)) return null;
      const path = await spool.locate(cid);
      if (path === null) return { ok: false, reason: "gone" };
      const discard = () => spool.forget(cid);
      return { ok: true, source: { type: "file", path, mimeType: mime, sha256: cid, discard } };
    },
  };
}
