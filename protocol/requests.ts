/** The request schema of each routed `client:*` event: the relay's and the Computer's check. */
import type { z } from "zod";
import { Events, type ClientEvent } from "./events.ts";
import { GetBlobReqSchema, type GetBlobReq } from "./messages/blob.ts";
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
