/** The transport itself: `client:get_blob` (protocol.md §6; D15–D19). */
import { z } from "zod";
import { ClientRequestBaseSchema, LIMITS, Sha256Hex, wireInt, wireSize } from "./common.ts";

/** D19: opt-in binary carriage. Absent means the spec's base64 string. */
export const BlobFormatSchema = z.enum(["base64", "binary"]);
export type BlobFormat = z.infer<typeof BlobFormatSchema>;

/**
 * D63: the content-codings this stack applies to a chunk, by their HTTP names (RFC 9110 §8.4.1):
 * `br` (RFC 7932), `gzip` (RFC 1952), `deflate` (the zlib format, RFC 1950). `identity` means none.
 */
export const CONTENT_CODINGS = ["br", "gzip", "deflate"] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];
export const IDENTITY = "identity";

/** One token as a request may name it; tokens nobody knows are ignored, never refused (D63). */
const CodingToken = z.string().min(1).max(LIMITS.coding);

/**
 * D63: `content_encoding` on a request is the Agent's preference list, most wanted first (a single
 * token is a list of one); the Computer applies the first it supports to each chunk, or none.
 */
export const AcceptedCodingsSchema = z.union([
  CodingToken,
  z.array(CodingToken).max(LIMITS.codings),
]);

/**
 * `chunk_offset` absent means 0; negative is `4018 range` (so the schema lets it through);
 * non-integer is 400. `max_chunk_bytes` absent or `<= 0` means the Computer's default.
 */
export const GetBlobReqSchema = ClientRequestBaseSchema.extend({
  blob_handle: z.string().max(LIMITS.handle),
  chunk_offset: wireInt.optional(),
  max_chunk_bytes: wireInt.optional(),
  blob_format: BlobFormatSchema.optional(),
  content_encoding: AcceptedCodingsSchema.optional(),
});
export type GetBlobReq = z.infer<typeof GetBlobReqSchema>;

/** Binary carriage arrives as a Buffer (Node) or an ArrayBuffer/Uint8Array (other runtimes). */
export const BinaryBlobSchema = z.custom<Uint8Array>(
  (v) => v instanceof Uint8Array || v instanceof ArrayBuffer,
  "Expected binary data",
);

export const GetBlobRetSchema = z.looseObject({
  blob_handle: z.string(),
  mime_type: z.string(),
  total_size: wireSize,
  sha256: Sha256Hex,
  chunk_offset: wireSize,
  eof: z.boolean(),
  blob: z.union([z.string(), BinaryBlobSchema]),
  req_id: z.string(),
  blob_format: BlobFormatSchema.optional(),
  /**
   * D63: on every answer to a request that carried `content_encoding`: the coding `blob` is in
   * (`identity` when none), and how many resource bytes it decodes to. `chunk_offset`,
   * `total_size`, `sha256` and `eof` measure the decoded bytes.
   */
  content_encoding: z.string().optional(),
  decoded_size: wireSize.optional(),
});
export type GetBlobRet = z.infer<typeof GetBlobRetSchema>;
