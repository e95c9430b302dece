/**
 * The Agent SDK's typed errors. Two families:
 * - `ProtocolError` subclasses: a flat ErrorPayload the Server or a Computer answered, rebuilt by
 *   code with `protocolErrorFromWire` so callers branch on the class, never on message text.
 * - Local errors (`AgentError` subclasses): things this SDK decided (timeouts, a dropped socket,
 *   a chunk that broke the get_blob contract, bytes that failed their sha256).
 *
 * `details` of a protocol error is diagnostics only: the spec says an Agent MUST NOT show it to end
 * users (docs/protocol.md, "Errors"; D23), so `message` of these errors never embeds it.
 */
import { ErrorCode, ProtocolError, type ErrorPayload } from "@a2c-smcp/protocol";

export { ProtocolError };

/** 4008 at the handshake: the Server speaks another protocol version (docs/protocol.md, "Connection"). */
export class ProtocolVersionError extends ProtocolError {
  override readonly name: string = "ProtocolVersionError";
  readonly serverVersion: string;
  readonly clientVersion: string;
  readonly minSupported: string;
  readonly maxSupported: string;

  constructor(payload: ErrorPayload) {
    const { code, message, details, ...extra } = payload;
    super(code, message, details, extra);
    const str = (k: string): string => (typeof extra[k] === "string" ? extra[k] : "");
    this.serverVersion = str("server_version");
    this.clientVersion = str("client_version");
    this.minSupported = str("min_supported");
    this.maxSupported = str("max_supported");
  }
}

/** 401 at connect: the Server's auth provider refused the token. */
export class AuthError extends ProtocolError {
  override readonly name: string = "AuthError";
}
/** 400: the payload failed the receiver's schema. */
export class BadRequestError extends ProtocolError {
  override readonly name: string = "BadRequestError";
}
/** 403: this socket is not the office's Agent, or the operation is not allowed. */
export class ForbiddenError extends ProtocolError {
  override readonly name: string = "ForbiddenError";
}
/** 404: no Computer of that name in the office, or it disconnected mid-request (D9, D11). */
export class ComputerNotFoundError extends ProtocolError {
  override readonly name: string = "ComputerNotFoundError";
}
/** 408: the Computer did not answer within the Server's relay timeout (D10). */
export class RelayTimeoutError extends ProtocolError {
  override readonly name: string = "RelayTimeoutError";
}
/** 500: internal error or busy (`details.reason: "busy"`). */
export class ServerError extends ProtocolError {
  override readonly name: string = "ServerError";
}
/** 4103: the request was sent before joining an office. */
export class NotInOfficeError extends ProtocolError {
  override readonly name: string = "NotInOfficeError";
}
/** 4014: the skill name is well formed but not installed (refresh get_skills and retry). */
export class SkillNotFoundError extends ProtocolError {
  override readonly name: string = "SkillNotFoundError";
}
/** 4016: the name failed the lexer; never retry the same name. */
export class InvalidSkillNameError extends ProtocolError {
  override readonly name: string = "InvalidSkillNameError";
}
/** 4017: get_skill refused the rel_path at mint time (`reason`: traversal, forbidden, ...). */
export class SkillResourceError extends ProtocolError {
  override readonly name: string = "SkillResourceError";
}
/** 4018: get_blob refused the pull (`reason`: invalid_handle, forbidden, gone, range, ...). */
export class BlobNotAccessibleError extends ProtocolError {
  override readonly name: string = "BlobNotAccessibleError";
}
/**
 * 4018 `gone`: the source behind the handle is no longer servable. The handle will not work
 * again: go back to the producer (`getSkill` / `callTool`) for a fresh handle (docs/protocol.md, "The blob transport").
 */
export class BlobGoneError extends BlobNotAccessibleError {
  override readonly name: string = "BlobGoneError";
}

/**
 * 4019: the Computer refused or failed an upload chunk (`client:put_blob`). `reason` is an open
 * enum: a reason this SDK does not know stays a plain `BlobWriteError` ("do not retry,
 * diagnose"); a 4019 without one reads as `invalid_upload`, as the reference SDKs read it.
 */
export class BlobWriteError extends ProtocolError {
  override readonly name: string = "BlobWriteError";
  override get reason(): string {
    return super.reason ?? "invalid_upload";
  }
}
/** 4019 `forbidden`: the Computer has no usable landing root (fail-closed). */
export class UploadForbiddenError extends BlobWriteError {
  override readonly name: string = "UploadForbiddenError";
}
/** 4019 `too_large`: the declared size is over the Computer's upload cap. */
export class UploadTooLargeError extends BlobWriteError {
  override readonly name: string = "UploadTooLargeError";
  /** The size declared (`details.total_size`), when the Computer echoed it. */
  get totalSize(): number | undefined {
    const v = this.details?.total_size;
    return typeof v === "number" ? v : undefined;
  }
}
/** 4019 `busy`: the Computer's concurrent uploads are at their cap; back off, send again from 0. */
export class UploadBusyError extends BlobWriteError {
  override readonly name: string = "UploadBusyError";
}
/** 4019 `integrity`: the bytes the Computer received do not hash to the declared sha256. */
export class UploadIntegrityError extends BlobWriteError {
  override readonly name: string = "UploadIntegrityError";
}
/** 4019 `invalid_declaration`: `total_size`, `sha256`, `name_hint` or `blob` malformed. */
export class InvalidDeclarationError extends BlobWriteError {
  override readonly name: string = "InvalidDeclarationError";
}
/** 4019 `invalid_upload`: the upload session is unknown or expired (idle timeout, restart). */
export class InvalidUploadError extends BlobWriteError {
  override readonly name: string = "InvalidUploadError";
}
/** 4019 `range`: a chunk's offset is not what the Computer received, or it overruns the size. */
export class UploadRangeError extends BlobWriteError {
  override readonly name: string = "UploadRangeError";
}
/** 4019 `io_error`: the Computer could not write, flush or store the file (disk full, ...). */
export class UploadIoError extends BlobWriteError {
  override readonly name: string = "UploadIoError";
}

type BlobWriteClass = new (
  code: number,
  message: string,
  details?: Record<string, unknown>,
  extra?: Record<string, unknown>,
) => BlobWriteError;

const BLOB_WRITE_CLASSES: Readonly<Record<string, BlobWriteClass>> = {
  forbidden: UploadForbiddenError,
  too_large: UploadTooLargeError,
  busy: UploadBusyError,
  integrity: UploadIntegrityError,
  invalid_declaration: InvalidDeclarationError,
  invalid_upload: InvalidUploadError,
  range: UploadRangeError,
  io_error: UploadIoError,
};

/** Rebuilds a flat ErrorPayload as the most specific class for its code. */
export function protocolErrorFromWire(payload: ErrorPayload): ProtocolError {
  const { code, message, details, ...extra } = payload;
  switch (code) {
    case ErrorCode.ProtocolVersionMismatch:
      return new ProtocolVersionError(payload);
    case ErrorCode.Unauthorized:
      return new AuthError(code, message, details, extra);
    case ErrorCode.BadRequest:
      return new BadRequestError(code, message, details, extra);
    case ErrorCode.Forbidden:
      return new ForbiddenError(code, message, details, extra);
    case ErrorCode.NotFound:
      return new ComputerNotFoundError(code, message, details, extra);
    case ErrorCode.Timeout:
      return new RelayTimeoutError(code, message, details, extra);
    case ErrorCode.Internal:
      return new ServerError(code, message, details, extra);
    case ErrorCode.NotInRoom:
      return new NotInOfficeError(code, message, details, extra);
    case ErrorCode.McpServerNotFound:
      return new SkillNotFoundError(code, message, details, extra);
    case ErrorCode.InvalidSkillName:
      return new InvalidSkillNameError(code, message, details, extra);
    case ErrorCode.SkillResourceNotAccessible:
      return new SkillResourceError(code, message, details, extra);
    case ErrorCode.BlobNotAccessible:
      return details?.reason === "gone"
        ? new BlobGoneError(code, message, details, extra)
        : new BlobNotAccessibleError(code, message, details, extra);
    case ErrorCode.BlobWriteFailed: {
      const reason = typeof details?.reason === "string" ? details.reason : "invalid_upload";
      const cls = Object.hasOwn(BLOB_WRITE_CLASSES, reason)
        ? BLOB_WRITE_CLASSES[reason]!
        : BlobWriteError;
      return new cls(code, message, details, extra);
    }
    default:
      return new ProtocolError(code, message, details, extra);
  }
}

// ---------------------------------------------------------------------------------------------
// Local errors (never sent on the wire)

/** Base of every error this SDK raises on its own. `code` is a stable string for branching. */
export class AgentError extends Error {
  override readonly name: string = "AgentError";
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** No ack within the local wait (the request may still complete on the Computer). */
export class RequestTimeoutError extends AgentError {
  override readonly name: string = "RequestTimeoutError";
  readonly event: string;
  readonly timeoutMs: number;
  constructor(event: string, timeoutMs: number) {
    super("REQUEST_TIMEOUT", `${event}: no answer within ${timeoutMs} ms`);
    this.event = event;
    this.timeoutMs = timeoutMs;
  }
}

/** Our own socket is (or went) down; detected from socket.io's events, never from a timeout. */
export class DisconnectedError extends AgentError {
  override readonly name: string = "DisconnectedError";
  constructor(message = "Not connected to the Server") {
    super("DISCONNECTED", message);
  }
}

/** Why a connect failed below the protocol (`ConnectError.reason`). */
export type ConnectFailure =
  | "invalid_url" // not an http(s):// or ws(s):// URL
  | "refused" // nothing listens there (ECONNREFUSED)
  | "dns" // the host name does not resolve (ENOTFOUND, EAI_AGAIN)
  | "unreachable" // no route, network down, reset (EHOSTUNREACH, ENETUNREACH, ECONNRESET, ...)
  | "timeout" // no handshake answer within the connect timeout
  | "tls" // the TLS handshake failed (certificate, or the peer does not speak TLS)
  | "http" // the handshake got an HTTP error status without a flat ErrorPayload
  | "other";

/**
 * The Server could not be reached at all. `message` names the URL and the cause in one line
 * ("cannot connect to http://127.0.0.1:1: connection refused (ECONNREFUSED)"); the parts are
 * typed fields for callers that branch.
 */
export class ConnectError extends AgentError {
  override readonly name: string = "ConnectError";
  /** The Server URL the client was given. */
  readonly url: string;
  readonly reason: ConnectFailure;
  /** The HTTP status of an `http` failure. */
  readonly status: number | undefined;
  /** The system / TLS error code underneath, e.g. `ECONNREFUSED`, `DEPTH_ZERO_SELF_SIGNED_CERT`. */
  readonly systemCode: string | undefined;
  constructor(
    url: string,
    reason: ConnectFailure,
    detail: string,
    options: { cause?: unknown; status?: number; systemCode?: string } = {},
  ) {
    super("CONNECT_FAILED", `cannot connect to ${url}: ${detail}`, { cause: options.cause });
    this.url = url;
    this.reason = reason;
    this.status = options.status;
    this.systemCode = options.systemCode;
  }
}

/** `server:join_office` answered `(false, reason)`. */
export class JoinOfficeError extends AgentError {
  override readonly name: string = "JoinOfficeError";
  readonly reason: string;
  constructor(reason: string) {
    super("JOIN_REFUSED", `join_office refused: ${reason}`);
    this.reason = reason;
  }
}

/** An answer did not match the protocol schema (a buggy or hostile peer). */
export class InvalidResponseError extends AgentError {
  override readonly name: string = "InvalidResponseError";
  constructor(message: string) {
    super("INVALID_RESPONSE", message);
  }
}

/**
 * A get_blob answer broke the transport contract: it did not start where it was asked, made no
 * progress without `eof`, overran `total_size`, disagreed with `eof`, or carried malformed base64.
 * A Computer that does this once will do it again, so it is final.
 */
export class ChunkContractError extends AgentError {
  override readonly name: string = "ChunkContractError";
  readonly offset: number;
  constructor(offset: number, message: string) {
    super("CHUNK_CONTRACT", `chunk at offset ${offset}: ${message}`);
    this.offset = offset;
  }
}

/**
 * A pull that stopped making progress: it moved less than its minimum rate over a whole window
 * (`speed`: `speedLimit` bytes a second over `speedTimeMs`), or outlasted its overall bound
 * (`max_time`: `maxTimeMs`). What a download wrote so far is kept for a resume.
 */
export class TooSlowError extends AgentError {
  override readonly name: string = "TooSlowError";
  readonly reason: "speed" | "max_time";
  constructor(message: string, reason: "speed" | "max_time") {
    super("TOO_SLOW", message);
    this.reason = reason;
  }
}

/** Bytes failed their sha256 / size after the bounded re-reads, or a producer's promise. */
export class IntegrityError extends AgentError {
  override readonly name: string = "IntegrityError";
  readonly expected: string | undefined;
  readonly actual: string | undefined;
  constructor(message: string, expected?: string, actual?: string, code = "INTEGRITY") {
    super(code, message);
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * The Computer now serves different content than the producer's answer named (its sha256 or
 * size changed between mint and pull, or kept changing during the read). Go back to the producer.
 */
export class BlobChangedError extends IntegrityError {
  override readonly name: string = "BlobChangedError";
  constructor(message: string, expected?: string, actual?: string) {
    super(message, expected, actual, "BLOB_CHANGED");
  }
}

/** What a blob is too large for (`BlobTooLargeError.reason`). */
export type TooLargeFor =
  | "limit" // the read's `maxBytes` (in-memory reads have a default, docs/configuration.md)
  | "buffer" // one Buffer (`buffer.constants.MAX_LENGTH`)
  | "string" // one JavaScript string (a text body, a restored sideband item's base64)
  | "file"; // one file on that file system (EFBIG)

/**
 * The blob's `total_size` is more than its destination can hold: over the read's `maxBytes`,
 * over what one Buffer or one string can hold, or over what the file system allows for one file.
 * Decided from the size before anything is allocated (a file: when it is sized). Pull it to a
 * file (`downloadBlob`), stream it (`blobChunks`), or raise `maxBytes`.
 */
export class BlobTooLargeError extends AgentError {
  override readonly name: string = "BlobTooLargeError";
  readonly totalSize: number;
  /** The most the destination holds, in bytes (`undefined` when the file system did not say). */
  readonly limit: number | undefined;
  readonly reason: TooLargeFor;
  constructor(totalSize: number, limit: number | undefined, reason: TooLargeFor) {
    const what: Record<TooLargeFor, string> = {
      limit: "the read's maxBytes",
      buffer: "what one Buffer holds",
      string: "what one string holds",
      file: "what the file system allows for one file",
    };
    const cap = limit !== undefined ? ` (${limit} bytes)` : "";
    super("BLOB_TOO_LARGE", `the blob is ${totalSize} bytes, over ${what[reason]}${cap}`);
    this.totalSize = totalSize;
    this.limit = limit;
    this.reason = reason;
  }
}

/**
 * Writing a download's file failed (the disk is full, a quota, an I/O error, no permission): the
 * temporary file was removed and the target path left as it was. `systemCode` is the error code
 * underneath (`ENOSPC`, `EDQUOT`, `EIO`, `EACCES`, ...), `cause` the error itself.
 */
export class FileWriteError extends AgentError {
  override readonly name: string = "FileWriteError";
  readonly path: string;
  readonly systemCode: string | undefined;
  constructor(path: string, cause: unknown) {
    const e = cause as NodeJS.ErrnoException | undefined;
    const code = typeof e?.code === "string" ? e.code : undefined;
    const why = (e?.message ?? String(cause)).replace(/^[A-Z]+: /, "").split(",")[0];
    super("FILE_WRITE", `cannot write '${path}': ${why}${code ? ` (${code})` : ""}`, { cause });
    this.path = path;
    this.systemCode = code;
  }
}

/** Why an upload failed on this side (`UploadError.reason`), as the reference SDKs name them. */
export type UploadFailure =
  | "empty_payload" // nothing to upload: the protocol's total_size is at least 1
  | "bad_chunk_size" // a chunk size below 1
  | "incomplete_ack" // the final answer named no landing_path
  | "echo_mismatch" // the Computer stored another size or sha256 than declared
  | "source_changed" // the file or stream changed after its sha256 was taken
  | "upload_unsupported"; // the Computer (or the Server) does not know client:put_blob

/**
 * An upload failed for a reason this SDK decided: the source (empty, changed while it was sent),
 * the Computer's answer (no landing path, another digest or size than declared), or a peer that
 * does not speak `client:put_blob` at all (`UploadUnsupportedError`).
 */
export class UploadError extends AgentError {
  override readonly name: string = "UploadError";
  readonly reason: UploadFailure;
  constructor(reason: UploadFailure, message: string, options?: { cause?: unknown }) {
    super(`UPLOAD_${reason.toUpperCase()}`, message, options);
    this.reason = reason;
  }
}

/**
 * The Computer, or the Server in between, does not speak `client:put_blob` (a peer of protocol
 * 0.3, answering `404 unknown_event`, or one whose first chunk never got an answer). Nothing was
 * stored: the bytes are still the caller's to hand over another way.
 */
export class UploadUnsupportedError extends UploadError {
  override readonly name: string = "UploadUnsupportedError";
  /** What the upload would have declared (upstream's error carries them too), when known. */
  readonly totalSize: number | undefined;
  readonly sha256: string | undefined;
  readonly nameHint: string | undefined;
  constructor(
    message: string,
    options: { cause?: unknown; totalSize?: number; sha256?: string; nameHint?: string } = {},
  ) {
    super("upload_unsupported", message, { cause: options.cause });
    this.totalSize = options.totalSize;
    this.sha256 = options.sha256;
    this.nameHint = options.nameHint;
  }
}

/** A sidebanded tool_call item could not be restored; `cause` holds why. */
export class SidebandRestoreError extends AgentError {
  override readonly name: string = "SidebandRestoreError";
  readonly itemIndex: number;
  constructor(itemIndex: number, message: string, options?: { cause?: unknown }) {
    super("SIDEBAND_RESTORE", `content[${itemIndex}]: ${message}`, options);
    this.itemIndex = itemIndex;
  }
}

/** The error an aborted signal stands for (its reason when that is an Error). */
export function abortError(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r;
  const e = new Error("The operation was aborted", { cause: r });
  e.name = "AbortError";
  return e;
}

/** `unknown` as an Error (wrapping non-errors), for rethrowing. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
