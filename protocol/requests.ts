/**
 * The request schema of each routed `client:*` event (the relay's and the Computer's check), and
 * the zod-free checks of the two messages every chunk sends: its request and its answer.
 */
import type { z } from "zod";
import { Events, type ClientEvent } from "./events.ts";
import { GetBlobReqSchema, type GetBlobReq, type GetBlobRet } from "./messages/blob.ts";
import { LIMITS } from "./messages/common.ts";
import { GetSkillReqSchema, GetSkillsReqSchema } from "./messages/skill.ts";
import { GetToolsReqSchema, ToolCallReqSchema } from "./messages/tool.ts";
import { PutBlobEnvelopeSchema } from "./messages/upload.ts";

export const CLIENT_REQUEST_SCHEMAS: Readonly<Record<ClientEvent, z.ZodType>> = {
  [Events.GetTools]: GetToolsReqSchema,
  [Events.ToolCall]: ToolCallReqSchema,
  [Events.GetSkills]: GetSkillsReqSchema,
  [Events.GetSkill]: GetSkillReqSchema,
  [Events.GetBlob]: GetBlobReqSchema,
  // The routing fields only: the upload store judges the rest with 4019 reasons.
  [Events.PutBlob]: PutBlobEnvelopeSchema,
};

/**
 * A `client:get_blob` payload that GetBlobReqSchema certainly accepts, checked without zod: the
 * per-chunk request of every pull, on the Server's relay and the Computer's dispatch. It only
 * ever says yes where the schema says yes (a property test holds it to that); anything else goes
 * through the schema, so D7 stays the schema's call.
 */
export function plainGetBlob(p: unknown): p is GetBlobReq {
  if (typeof p !== "object" || p === null || Array.isArray(p)) return false;
  const r = p as Record<string, unknown>;
  return (
    text(r.agent, 1, LIMITS.name) &&
    text(r.req_id, 1, LIMITS.reqId) &&
    text(r.computer, 1, LIMITS.name) &&
    text(r.blob_handle, 0, LIMITS.handle) &&
    optionalInt(r.chunk_offset) &&
    optionalInt(r.max_chunk_bytes) &&
    (r.blob_format === undefined || r.blob_format === "base64" || r.blob_format === "binary") &&
    (r.content_encoding === undefined || codings(r.content_encoding))
  );
}

const HEX64 = /^[0-9a-f]{64}$/;

/** A non-negative JSON integer (`wireSize`). */
function isSize(v: unknown): boolean {
  return typeof v === "number" && Number.isInteger(v) && v >= 0;
}

/**
 * True when `v` has the shape of a `GetBlobRet` (extra keys allowed, as the schema allows): what
 * `GetBlobRetSchema` accepts (test/agent/blob-answer-shape.test.ts compares the two), without
 * walking a schema for every chunk. The Agent's check of each answer.
 */
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
    (format === undefined || format === "base64" || format === "binary") &&
    (a.content_encoding === undefined || typeof a.content_encoding === "string") &&
    (a.decoded_size === undefined || isSize(a.decoded_size))
  );
}

/** `content_encoding` as AcceptedCodingsSchema takes it: a token, or a short list of tokens. */
function codings(v: unknown): boolean {
  if (!Array.isArray(v)) return text(v, 1, LIMITS.coding);
  if (v.length > LIMITS.codings) return false;
  for (const t of v) if (!text(t, 1, LIMITS.coding)) return false;
  return true;
}

function text(v: unknown, min: number, max: number): boolean {
  return typeof v === "string" && v.length >= min && v.length <= max;
}

function optionalInt(v: unknown): boolean {
  return v === undefined || (typeof v === "number" && Number.isInteger(v));
}
