/**
 * Uploads: `client:put_blob`, Agent → Computer, one chunk per request (protocol 0.4.0;
 * docs/protocol.md, "client:put_blob"). The Agent declares `total_size` and `sha256` on the first
 * chunk; the Computer allocates `upload_id`, checks every chunk in order and stores the file
 * under its landing root.
 */
import { z } from "zod";
import { BinaryBlobSchema, BlobFormatSchema } from "./blob.ts";
import { ClientRequestBaseSchema, LIMITS, Sha256Hex, wireInt, wireSize } from "./common.ts";

/** `upload_id`: a uuid4 as 32 lowercase hex characters, allocated by the Computer. */
export const UPLOAD_ID_PATTERN = /^[0-9a-f]{32}$/;
export const UploadIdSchema = z.string().regex(UPLOAD_ID_PATTERN, "Expected 32 lowercase hex");

/** Upstream's bounds of the Computer's upload store, and the Agent's default chunk. */
export const UPLOAD_DEFAULTS = {
  /** A session idle (since its last accepted chunk) longer than this is dropped. */
  idleTimeoutSeconds: 120,
  /** Sessions open at once before a first chunk is `busy`. */
  maxConcurrent: 4,
  /** Largest declared `total_size` (100 MiB); equal is accepted. */
  maxBytes: 100 * 1024 * 1024,
  /** Raw bytes per chunk of upstream's Agent (349,528 base64 characters). */
  chunkBytes: 256 * 1024,
} as const;

/** Directory under the landing root that holds uploads in flight (`<upload_id>.part`). */
export const UPLOAD_PART_DIR = ".a2c-upload";
export const UPLOAD_PART_SUFFIX = ".part";
/** Longest sanitized `name_hint` fragment. */
export const NAME_HINT_MAX_CHARS = 64;

/**
 * The file-name fragment a `name_hint` gives: trimmed, each run of characters outside
 * `[A-Za-z0-9._-]` replaced by `_`, cut to 64 characters, leading and trailing `.`, `_`, `-`
 * stripped. Empty means no suffix: the stored name is the `upload_id` alone.
 */
export function sanitizeNameHint(hint: unknown): string {
  if (typeof hint !== "string") return "";
  return hint
    .trim()
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .slice(0, NAME_HINT_MAX_CHARS)
    .replace(/^[._-]+|[._-]+$/g, "");
}

/** The stored file's name: `<upload_id>` or `<upload_id>_<fragment>`. */
export function landingName(uploadId: string, nameHint: unknown): string {
  const fragment = sanitizeNameHint(nameHint);
  return fragment === "" ? uploadId : `${uploadId}_${fragment}`;
}

/**
 * What the Server's relay and the Computer's dispatcher check of a `client:put_blob` (D7): the
 * routing fields only. Every other field is the upload store's to judge, in upstream's order and
 * with upstream's 4019 reasons (`total_size: true` is `invalid_declaration`, not a 400).
 */
export const PutBlobEnvelopeSchema = ClientRequestBaseSchema;

/**
 * A well-formed chunk, as an Agent sends it. `upload_id` absent (or null) means the first chunk,
 * which carries `total_size` and `sha256` (and `name_hint` if any); later chunks carry none of
 * the three. `blob_format` (this stack's extension, D19's negotiation for uploads): present on a
 * request, it asks whether the Computer takes binary; `"binary"` says this chunk's `blob` is a
 * binary attachment, which an Agent sends only after an ack offered it.
 */
export const PutBlobReqSchema = ClientRequestBaseSchema.extend({
  upload_id: z.string().max(LIMITS.uploadId).nullable().optional(),
  chunk_offset: wireSize,
  eof: z.boolean(),
  total_size: wireInt.refine((n) => n >= 1, { message: "total_size must be >= 1" }).optional(),
  sha256: Sha256Hex.optional(),
  name_hint: z.string().max(LIMITS.relPath).optional(),
  blob: z.union([z.string(), BinaryBlobSchema]),
  blob_format: BlobFormatSchema.optional(),
}).refine(
  (r) =>
    r.upload_id === undefined || r.upload_id === null
      ? r.total_size !== undefined && r.sha256 !== undefined
      : r.total_size === undefined && r.sha256 === undefined && r.name_hint === undefined,
  { message: "declaration fields belong on the first chunk, and only there" },
);
export type PutBlobReq = z.infer<typeof PutBlobReqSchema>;

/**
 * The Computer's offer of binary carriage: on every ack to a request that carried `blob_format`.
 * Upstream Computers ignore the request field and never send it, so an Agent keeps base64.
 */
const BinaryOffer = { blob_format: z.literal("binary").optional() };

/** A non-final ack: exactly `{chunk_offset, req_id, upload_id}` (plus the offer, if asked). */
export const PutBlobAckSchema = z.strictObject({
  chunk_offset: wireSize,
  req_id: z.string(),
  upload_id: z.string(),
  ...BinaryOffer,
});
export type PutBlobAck = z.infer<typeof PutBlobAckSchema>;

/**
 * The final ack: exactly the six keys (plus the offer, if asked). `landing_path` is the absolute
 * path of the stored file; `total_size` the bytes stored; `sha256` the digest the Computer
 * recomputed, which the Agent compares with what it declared.
 */
export const PutBlobFinalAckSchema = z.strictObject({
  chunk_offset: wireSize,
  landing_path: z.string().min(1),
  req_id: z.string(),
  sha256: Sha256Hex,
  total_size: wireSize,
  upload_id: z.string(),
  ...BinaryOffer,
});
export type PutBlobFinalAck = z.infer<typeof PutBlobFinalAckSchema>;

export const PutBlobRetSchema = z.union([PutBlobFinalAckSchema, PutBlobAckSchema]);
export type PutBlobRet = z.infer<typeof PutBlobRetSchema>;
