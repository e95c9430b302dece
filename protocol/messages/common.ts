/**
 * Building blocks shared by every wire message. Lengths are bounded so that a hostile payload is a
 * 400, not a memory problem, and so that the size math of D16 has finite envelopes to budget for.
 */
import { z } from "zod";

/** Upper bounds on identifier-like strings. Generous for real use, small for an attacker. */
export const LIMITS = {
  name: 256,
  reqId: 256,
  officeId: 256,
  handle: 4096,
  relPath: 4096,
  skillName: 512,
  toolName: 512,
  mime: 256,
  /** A content-coding token (`br`, `gzip`; D63) and how many one request may list. */
  coding: 32,
  codings: 8,
  /** An `upload_id` as a request may carry it (ours are 32 characters). */
  uploadId: 256,
} as const;

/** A JSON integer (any magnitude JSON can carry as an exact integer). Non-integers are a 400. */
export const wireInt = z
  .number()
  .refine((n) => Number.isInteger(n), { message: "Expected an integer" });

/** A non-negative JSON integer. */
export const wireSize = wireInt.refine((n) => n >= 0, {
  message: "Expected a non-negative integer",
});

/** sha256 as 64 lowercase hex characters. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "Expected 64 lowercase hex characters");

export const NameString = z.string().min(1).max(LIMITS.name);
export const ReqId = z.string().min(1).max(LIMITS.reqId);

/** Base of every Agent-originated request (`agent`, `req_id`: protocol.md §4.3). */
export const AgentCallDataSchema = z.looseObject({
  agent: NameString,
  req_id: ReqId,
});
export type AgentCallData = z.infer<typeof AgentCallDataSchema>;

/** Base of every routed `client:*` request: adds the target Computer's name. */
export const ClientRequestBaseSchema = AgentCallDataSchema.extend({
  computer: NameString,
});
export type ClientRequestBase = z.infer<typeof ClientRequestBaseSchema>;
