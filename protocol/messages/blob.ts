/** The transport itself: `client:get_blob` (protocol.md §6; D15–D19). */
import { z } from "zod";
import { ClientRequestBaseSchema, LIMITS, Sha256Hex, wireInt, wireSize } from "./common.ts";

/** D19: opt-in binary carriage. Absent means the spec's base64 string. */
export const BlobFormatSchema = z.enum(["base64", "binary"]);
export type BlobFormat = z.infer<typeof BlobFormatSchema>;

/**
 * `chunk_offset` absent means 0; negative is `4018 range` (so the schema lets it through);
 * non-integer is 400. `max_chunk_bytes` absent or `<= 0` means the Computer's default.
 */
export const GetBlobReqSchema = ClientRequestBaseSchema.extend({
  blob_handle: z.string().max(LIMITS.handle),
  chunk_offset: wireInt.optional(),
  max_chunk_bytes: wireInt.optional(),
  blob_format: BlobFormatSchema.optional(),
});
export type GetBlobReq = z.infer<typeof GetBlobReqSchema>;

/** Binary carriage arrives as a Buffer (Node) or an ArrayBuffer/Uint8Array (other runtimes). */
const BinaryBlob = z.custom<Uint8Array>(
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
  blob: z.union([z.string(), BinaryBlob]),
  req_id: z.string(),
  blob_format: BlobFormatSchema.optional(),
});
export type GetBlobRet = z.infer<typeof GetBlobRetSchema>;
