/**
 * Turns a socket.io-client `connect_error` into a typed error (digest §1.4, DECISIONS D1, D4):
 * - HTTP 400 on the polling handshake: the body is a flat ErrorPayload; `code: 4008` →
 *   `ProtocolVersionError` with both versions. The `X-A2C-Error-Code` header is only a fallback.
 * - WebSocket close 4900 (a WS-only rejection): `ProtocolVersionError` with code 4900 and empty
 *   versions ("4900 is a WS close code, 4008 is an ErrorPayload.code; never conflate them").
 * - A middleware refusal carries its flat payload in `err.data` (401 → `AuthError`).
 * - Anything else: `ConnectError` (unreachable, timeout, TLS, ...).
 */
import { ERROR_CODE_HEADER, isErrorPayload } from "@a2c-smcp/protocol";
import { ConnectError, ProtocolVersionError, protocolErrorFromWire } from "./errors.ts";

interface XhrLike {
  responseText?: unknown;
  getResponseHeader?: (name: string) => unknown;
}

function parseBody(text: unknown): unknown {
  if (typeof text !== "string" || text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function classifyConnectError(err: unknown): Error {
  const e = err as {
    message?: unknown;
    data?: unknown;
    type?: unknown;
    description?: unknown;
    context?: unknown;
  };
  if (isErrorPayload(e.data)) return protocolErrorFromWire(e.data);

  const description = e.description as { code?: unknown } | number | undefined;
  if (e.type === "TransportError") {
    if (typeof description === "number" && description >= 400) {
      const xhr = (e.context ?? {}) as XhrLike;
      const body = parseBody(xhr.responseText);
      if (isErrorPayload(body)) return protocolErrorFromWire(body);
      let header: unknown;
      try {
        header = xhr.getResponseHeader?.(ERROR_CODE_HEADER);
      } catch {
        header = undefined;
      }
      if (String(header) === "4008") {
        return new ProtocolVersionError({ code: 4008, message: "Protocol version mismatch" });
      }
      return new ConnectError(`handshake refused with HTTP ${description}`, { cause: err });
    }
    if (typeof description === "object" && description !== null && description.code === 4900) {
      return versionClose4900();
    }
  }
  const msg = typeof e.message === "string" ? e.message : String(err);
  return new ConnectError(`cannot connect: ${msg}`, { cause: err });
}

/** The WebSocket close code a WS-only version rejection uses (digest §1.3). */
export const WS_CLOSE_VERSION = 4900;

/** "else raise with code 4900 and empty version fields" (digest §1.4). */
export function versionClose4900(): ProtocolVersionError {
  return new ProtocolVersionError({
    code: WS_CLOSE_VERSION,
    message: "Protocol version mismatch (WebSocket closed with 4900)",
  });
}

/**
 * true when a socket.io-client `disconnect` description is a WebSocket close with code 4900
 * (engine.io-client passes `{ description, context: CloseEvent }` for a transport close).
 */
export function isVersionClose(details: unknown): boolean {
  if (typeof details !== "object" || details === null) return false;
  const context = (details as { context?: unknown }).context;
  if (typeof context !== "object" || context === null) return false;
  return (context as { code?: unknown }).code === WS_CLOSE_VERSION;
}
