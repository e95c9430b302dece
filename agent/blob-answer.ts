/**
 * The shape check of a `client:get_blob` answer, run once per chunk: it accepts exactly what the
 * protocol's `GetBlobRetSchema` accepts (test/agent/blob-answer-shape.test.ts compares the two on
 * generated answers) without walking a schema per chunk. What the values must be for the read at
 * hand (offset, length, eof, identity) is checked by the pull loop (pull-chunk.ts `checkChunk`).
 */
import { Events, isErrorPayload, type GetBlobRet } from "@a2c-smcp/protocol";
import { InvalidResponseError, protocolErrorFromWire } from "./errors.ts";

const HEX64 = /^[0-9a-f]{64}$/;

/** A non-negative JSON integer (the protocol's `wireSize`). */
function isSize(v: unknown): boolean {
  return typeof v === "number" && Number.isInteger(v) && v >= 0;
}

/** True when `v` has the shape of a `GetBlobRet` (extra keys allowed, as the schema allows). */
export function isGetBlobRet(v: unknown): v is GetBlobRet {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const a = v as Record<string, unknown>;
  const blob = a.blob;
  const format = a.blob_format;
  return (
    typeof a.blob_handle === "string" &&
    typeof a.mime_type === "string" &&
    isSize(a.total_size) &&
    typeof a.sha256 === "string" &&
    HEX64.test(a.sha256) &&
    isSize(a.chunk_offset) &&
    typeof a.eof === "boolean" &&
    (typeof blob === "string" || blob instanceof Uint8Array || blob instanceof ArrayBuffer) &&
    typeof a.req_id === "string" &&
    (format === undefined || format === "base64" || format === "binary")
  );
}

/** The answer as a `GetBlobRet`; a flat ErrorPayload is thrown typed, anything else invalid. */
export function parseBlobAnswer(answer: unknown): GetBlobRet {
  if (isErrorPayload(answer)) throw protocolErrorFromWire(answer);
  if (!isGetBlobRet(answer)) {
    throw new InvalidResponseError(`${Events.GetBlob}: answer does not match the protocol schema`);
  }
  return answer;
}
