/**
 * `client:put_blob` on the wire as the Agent speaks it: a chunk's payload (`putPayload`) and its
 * ack checked into a `PutAnswer` (`parsePutAnswer`), both run by the client for each chunk.
 */
import { isErrorPayload } from "@a2c-smcp/protocol";
import { InvalidResponseError, protocolErrorFromWire } from "./errors.ts";
import { markBase64Payload } from "./transport.ts";
import type { Carriage } from "./path.ts";

/** One chunk as the upload sends it; the client adds `agent`, `req_id` and `computer`. */
export interface PutChunk {
  /** Absent on the first chunk. */
  uploadId?: string;
  offset: number;
  eof: boolean;
  blob: string | Buffer;
  /** `blob` is bytes to send as base64 text (encoded here), not as a binary attachment. */
  asBase64?: boolean;
  /** The first chunk's declaration. */
  declaration?: { totalSize: number; sha256: string; nameHint?: string };
  /** `base64`: a base64 chunk that asks for binary carriage; `binary`: `blob` is an attachment. */
  blobFormat?: Carriage;
}

/** A `client:put_blob` ack, checked for its shape (`parsePutAnswer`). */
export interface PutAnswer {
  uploadId: string;
  chunkOffset: number;
  /** Final ack only. */
  landingPath?: unknown;
  sha256?: unknown;
  totalSize?: unknown;
  /** The Computer offered binary carriage (`blob_format: "binary"`). */
  binaryOffered: boolean;
}

/** The wire payload of `chunk`, in the order the spec lists the fields. */
export function putPayload(
  agent: string,
  reqId: string,
  computer: string,
  chunk: PutChunk,
): Record<string, unknown> {
  const p: Record<string, unknown> = { agent, req_id: reqId, computer };
  if (chunk.uploadId !== undefined) p.upload_id = chunk.uploadId;
  p.chunk_offset = chunk.offset;
  p.eof = chunk.eof;
  const d = chunk.declaration;
  if (d) {
    p.total_size = d.totalSize;
    p.sha256 = d.sha256;
    if (d.nameHint !== undefined) p.name_hint = d.nameHint;
  }
  if (chunk.asBase64 === true && Buffer.isBuffer(chunk.blob)) {
    p.blob = chunk.blob.toString("base64");
    markBase64Payload(p);
  } else {
    p.blob = chunk.blob;
  }
  if (chunk.blobFormat !== undefined) p.blob_format = chunk.blobFormat;
  return p;
}

export const isSize = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= 0;

/**
 * The ack as a `PutAnswer`; a flat ErrorPayload is thrown typed (4019 by its reason), anything
 * without a string `upload_id` and an integer `chunk_offset` is an `InvalidResponseError`. Keys
 * beyond the spec's are tolerated: exact key sets are the Computer's rule, not the Agent's.
 */
export function parsePutAnswer(answer: unknown): PutAnswer {
  if (isErrorPayload(answer)) throw protocolErrorFromWire(answer);
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) {
    throw new InvalidResponseError("client:put_blob: answer is not an object");
  }
  const a = answer as Record<string, unknown>;
  if (typeof a.upload_id !== "string" || !isSize(a.chunk_offset)) {
    throw new InvalidResponseError("client:put_blob: answer lacks upload_id or chunk_offset");
  }
  return {
    uploadId: a.upload_id,
    chunkOffset: a.chunk_offset,
    landingPath: a.landing_path,
    sha256: a.sha256,
    totalSize: a.total_size,
    binaryOffered: a.blob_format === "binary",
  };
}
