/**
 * The error registry: every code of the protocol (docs/protocol.md §9.2), the flat ErrorPayload, one builder per payload
 * this stack sends, and ProtocolError (rebuilt from the wire with `ProtocolError.fromWire`).
 *
 * Flat means `{code, message, details?, ...code-specific top-level fields}`; never an `error`
 * wrapper. `details` is diagnostics only and never holds a path, token, key or stack (D23).
 */
import { z } from "zod";

export const ErrorCode = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Timeout: 408,
  Internal: 500,
  ToolNotFound: 4001,
  ToolDisabled: 4002,
  ToolExecutionFailed: 4003,
  ToolTimeout: 4004,
  ToolRequiresConfirmation: 4005,
  ToolAuthorizationRequired: 4006,
  ToolAuthorizationFailed: 4007,
  ProtocolVersionMismatch: 4008,
  McpServerNotFound: 4014,
  McpCapabilityNotSupported: 4015,
  InvalidSkillName: 4016,
  SkillResourceNotAccessible: 4017,
  BlobNotAccessible: 4018,
  BlobWriteFailed: 4019,
  RoomFull: 4101,
  RoomNotFound: 4102,
  NotInRoom: 4103,
  CrossRoomAccess: 4104,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** What each code means and where it is carried. */
export const ERROR_CODES: Readonly<Record<ErrorCode, string>> = {
  400: "Bad Request: payload failed schema validation, or missing/invalid a2c_version",
  401: "Unauthorized: connect refused by the auth provider",
  403: "Forbidden: sender is not the office's Agent, or its `agent` field is not its own name",
  404: "Not Found: no Computer of that name in the sender's office, it disconnected mid-request, or the event is not supported",
  408: "Timeout: the Computer did not answer within the relay timeout",
  500: "Internal Error",
  4001: "Tool Not Found: tool_name is not in the Computer's exposed tool mapping",
  4002: "Tool Disabled",
  4003: "Tool Execution Failed",
  4004: "Tool Timeout (never used for cancellation)",
  4005: "Tool Requires Confirmation",
  4006: "Tool Authorization Required (CallToolResult.meta.error_code)",
  4007: "Tool Authorization Failed (CallToolResult.meta.error_code)",
  4008: "Protocol Version Mismatch (HTTP 400 body of the handshake)",
  4014: "MCP Server Not Found; reused for a well-formed but unknown skill name",
  4015: "MCP Capability Not Supported",
  4016: "Invalid Skill Name: the get_skill name lexer failed",
  4017: "Skill Resource Not Accessible: get_skill mint-time failure (details.reason)",
  4018: "Blob Not Accessible: get_blob pull-time failure (details.reason)",
  4019: "Blob Write Failed: put_blob upload-side failure (details.reason)",
  4101: "Room Full",
  4102: "Room Not Found",
  4103: "Not In Room: the sender has not joined an office",
  4104: "Cross Room Access",
};

/** 4017 reasons (open enum on the wire: consumers tolerate others). */
export const SkillResourceReason = {
  Traversal: "traversal",
  Forbidden: "forbidden",
  NotFound: "not_found",
  TooLarge: "too_large",
  /** The Computer's disk is full (ENOSPC, EDQUOT): retry once space is free (D57). */
  StorageFull: "storage_full",
  /** The Computer's disk failed a write (EIO, EROFS) (D57). */
  StorageError: "storage_error",
} as const;
export type SkillResourceReason = (typeof SkillResourceReason)[keyof typeof SkillResourceReason];

/** 4018 reasons (open enum on the wire: consumers tolerate others). */
export const BlobReason = {
  InvalidHandle: "invalid_handle",
  Forbidden: "forbidden",
  Gone: "gone",
  Range: "range",
  /** The Computer's disk is full (ENOSPC, EDQUOT): retry once space is free (D57). */
  StorageFull: "storage_full",
  /** The Computer's disk failed a write (EIO, EROFS) (D57). */
  StorageError: "storage_error",
} as const;
export type BlobReason = (typeof BlobReason)[keyof typeof BlobReason];

/** 4019 reasons (open enum on the wire: consumers tolerate others, "do not retry, diagnose"). */
export const UploadReason = {
  InvalidUpload: "invalid_upload",
  InvalidDeclaration: "invalid_declaration",
  Range: "range",
  TooLarge: "too_large",
  Busy: "busy",
  Forbidden: "forbidden",
  Integrity: "integrity",
  IoError: "io_error",
} as const;
export type UploadReason = (typeof UploadReason)[keyof typeof UploadReason];

/** The `message` of each 4019 the Computer sends: upstream's texts, byte for byte. */
export const UPLOAD_MESSAGES = {
  notConfigured: "landing root not configured",
  notWritable: "landing root not writable",
  badTotalSize: "total_size must be an int >= 1",
  badSha256: "sha256 must be a 64-char hex string",
  tooLarge: "declared total_size exceeds the upload cap",
  busy: "too many concurrent uploads",
  unknownUpload: "unknown or expired upload session",
  lateDeclaration: "declaration fields must only appear on the first chunk",
  offsetMismatch: "chunk_offset does not match received bytes",
  badBase64: "blob is not valid base64",
  blobNotString: "blob must be a base64 string",
  overrun: "received bytes exceed the declared total_size",
  shortFinal: "final chunk does not complete the declared total_size",
  writeFailed: "write to landing root failed",
  flushFailed: "flushing the upload failed",
  integrity: "sha256 mismatch; upload discarded",
  finalizeFailed: "finalizing the upload failed",
} as const;

/**
 * `details.storage_reason` of a 4019 `io_error` when the disk said why (D57's names, as the
 * spool and 4017/4018 use them): `storage_full` (ENOSPC, EDQUOT) or `storage_error` (EIO, EROFS).
 */
export const STORAGE_REASON_KEY = "storage_reason";

export const ErrorPayloadSchema = z.looseObject({
  code: z.number().int(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorPayload = z.infer<typeof ErrorPayloadSchema>;

/** 4008 carries four version strings at top level (all required). */
export const VersionMismatchPayloadSchema = ErrorPayloadSchema.extend({
  code: z.literal(4008),
  server_version: z.string(),
  client_version: z.string(),
  min_supported: z.string(),
  max_supported: z.string(),
});
export type VersionMismatchPayload = z.infer<typeof VersionMismatchPayloadSchema>;

/**
 * Tells a flat error from a success answer: a plain object whose top-level `code` is an integer
 * and `message` a string. No success answer of this protocol has a top-level `code`.
 */
export function isErrorPayload(value: unknown): value is ErrorPayload {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === "number" && Number.isInteger(v.code) && typeof v.message === "string";
}

// ---------------------------------------------------------------------------------------------
// Builders: one per payload this stack sends.

export function badRequest(message = "Invalid request payload"): ErrorPayload {
  return { code: 400, message };
}

export function missingVersion(): ErrorPayload {
  return { code: 400, message: "Missing a2c_version query parameter" };
}

export function invalidVersion(raw: string): ErrorPayload {
  // The raw value is echoed, truncated: it is the client's own input.
  return { code: 400, message: `Invalid a2c_version: ${JSON.stringify(raw.slice(0, 64))}` };
}

export function versionMismatch(v: {
  server_version: string;
  client_version: string;
  min_supported: string;
  max_supported: string;
}): VersionMismatchPayload {
  return {
    code: 4008,
    message: "Protocol version mismatch",
    server_version: v.server_version,
    client_version: v.client_version.slice(0, 64),
    min_supported: v.min_supported,
    max_supported: v.max_supported,
  };
}

export function unauthorized(message = "Unauthorized"): ErrorPayload {
  return { code: 401, message };
}

export function forbidden(
  message = "Forbidden: only the office's Agent may send this",
): ErrorPayload {
  return { code: 403, message };
}

/**
 * The request's `agent` field is not the name the sender joined its office with (D26,
 * protocol.md §5.1: only the payload is open to the client, never whose request it is).
 */
export function agentMismatch(): ErrorPayload {
  return {
    code: 403,
    message: "Forbidden: the agent field must be the sender's own name",
    details: { reason: "agent_mismatch" },
  };
}

/** Longest event name echoed in `unknownEvent`'s details; longer names are cut and say so. */
export const MAX_ECHOED_EVENT_CHARS = 64;

/**
 * An event with an ack callback that the receiver does not handle (one this stack does not serve,
 * such as `client:get_config`): answered at once instead of leaving the sender to its timeout.
 * The name is the peer's own input, echoed at most MAX_ECHOED_EVENT_CHARS long.
 */
export function unknownEvent(event: unknown): ErrorPayload {
  const name =
    typeof event === "string" ? event : typeof event === "number" ? String(event) : typeof event;
  const details: Record<string, unknown> = {
    reason: "unknown_event",
    event: name.slice(0, MAX_ECHOED_EVENT_CHARS),
  };
  if (name.length > MAX_ECHOED_EVENT_CHARS) {
    details.truncated = true;
    details.event_length = name.length;
  }
  return { code: 404, message: "Event not supported", details };
}

export function notInOffice(): ErrorPayload {
  return { code: 4103, message: "Not in an office: join an office first" };
}

/** D9 / D11: identical for "missing", "elsewhere" and "not a Computer" (no existence leak). */
export function computerNotFound(computerName: string, reason?: "disconnected"): ErrorPayload {
  const details: Record<string, unknown> = { computer_name: computerName };
  if (reason) details.reason = reason;
  return {
    code: 404,
    message: reason
      ? `Computer with name '${computerName}' disconnected`
      : `Computer with name '${computerName}' not found`,
    details,
  };
}

/** D10: the Computer did not answer in time. */
export function relayTimeout(computerName: string): ErrorPayload {
  return {
    code: 408,
    message: `Computer with name '${computerName}' did not answer in time`,
    details: { computer_name: computerName },
  };
}

/** Too many requests in flight, or a Computer's queue is full: retry later. */
export function busy(message = "Too many requests in flight"): ErrorPayload {
  return { code: 500, message, details: { reason: "busy" } };
}

export function internalError(message = "Internal error"): ErrorPayload {
  return { code: 500, message };
}

export function invalidSkillName(name: string): ErrorPayload {
  return {
    code: 4016,
    message: "Invalid skill name format",
    details: { name: name.slice(0, 512) },
  };
}

/** D22: SKILL reuse of 4014 carries the name in `details` and no `mcp_server`. */
export function skillNotFound(name: string): ErrorPayload {
  return { code: 4014, message: "Skill not found", details: { name } };
}

/**
 * `maxSize` (too_large only) is the Computer's cap, a custom `details` key: the operator who
 * sees the refusal learns how far over it is (docs/protocol.md, "The CLI shows details").
 */
export function skillResourceNotAccessible(
  reason: SkillResourceReason,
  relPath: string | undefined,
  totalSize?: number,
  maxSize?: number,
): ErrorPayload {
  const details: Record<string, unknown> = { reason };
  if (relPath !== undefined) details.rel_path = relPath.slice(0, 4096);
  if (totalSize !== undefined) details.total_size = totalSize;
  if (maxSize !== undefined) details.max_size = maxSize;
  return { code: 4017, message: "Skill resource not accessible", details };
}

export function blobNotAccessible(reason: BlobReason): ErrorPayload {
  return { code: 4018, message: "Blob not accessible", details: { reason } };
}

/**
 * A 4019. `details` holds `reason` and, where upstream puts them, `upload_id` (session-bound
 * errors), `total_size` (`too_large`), and this stack's `storage_reason` (`io_error`).
 */
export function blobWriteFailed(
  reason: UploadReason,
  message: string,
  extra: { upload_id?: string; total_size?: number; storage_reason?: string } = {},
): ErrorPayload {
  const details: Record<string, unknown> = { reason };
  if (extra.upload_id !== undefined) details.upload_id = extra.upload_id.slice(0, 256);
  if (extra.total_size !== undefined) details.total_size = extra.total_size;
  if (extra.storage_reason !== undefined) details[STORAGE_REASON_KEY] = extra.storage_reason;
  return { code: 4019, message, details };
}

/**
 * The reason of a 4019 as an Agent reads it: `details.reason` when it is a string, else
 * `invalid_upload` (upstream's reading of a 4019 without one). Unknown reasons come back as they
 * are: the caller treats them as "do not retry, diagnose".
 */
export function uploadFailureReason(payload: ErrorPayload): string {
  const r = payload.details?.reason;
  return typeof r === "string" ? r : UploadReason.InvalidUpload;
}

// ---------------------------------------------------------------------------------------------

/** A protocol error as a value: the flat payload's fields, throwable, rebuildable from the wire. */
export class ProtocolError extends Error {
  override readonly name: string = "ProtocolError";
  readonly code: number;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  /** Code-specific top-level fields (e.g. the 4008 versions), kept as received. */
  readonly extra: Readonly<Record<string, unknown>>;

  constructor(
    code: number,
    message: string,
    details?: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.code = code;
    this.details = details;
    this.extra = extra;
  }

  /** `details.reason` when it is a string (4017/4018 and the 404 `disconnected`). */
  get reason(): string | undefined {
    const r = this.details?.reason;
    return typeof r === "string" ? r : undefined;
  }

  /** Rebuilds the error from a flat payload (unknown top-level keys kept in `extra`). */
  static fromWire(payload: ErrorPayload): ProtocolError {
    const { code, message, details, ...extra } = payload;
    return new ProtocolError(code, message, details, extra);
  }

  /** The flat payload this error stands for (round-trips with `fromWire`). */
  toWire(): ErrorPayload {
    const out: ErrorPayload = { ...this.extra, code: this.code, message: this.message };
    if (this.details !== undefined) out.details = { ...this.details };
    return out;
  }
}
