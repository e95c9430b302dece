/**
 * Turns a socket.io-client `connect_error` into a typed error (docs/protocol.md, "Connection"; D1, D4):
 * - HTTP 400 on the polling handshake: the body is a flat ErrorPayload; `code: 4008` →
 *   `ProtocolVersionError` with both versions. The `X-A2C-Error-Code` header is only a fallback.
 * - WebSocket close 4900 (a WS-only rejection): `ProtocolVersionError` with code 4900 and empty
 *   versions ("4900 is a WS close code, 4008 is an ErrorPayload.code; never conflate them").
 * - A middleware refusal carries its flat payload in `err.data` (401 → `AuthError`).
 * - Anything else: `ConnectError` naming the URL and the real cause. engine.io-client reports
 *   every polling failure as "xhr poll error"; the cause is underneath: the HTTP status in
 *   `description`, and for a network failure the Node error (`code` ECONNREFUSED, ENOTFOUND, a
 *   TLS code, ...) that its XMLHttpRequest keeps in `context.statusText`.
 */
import { ERROR_CODE_HEADER, isErrorPayload } from "@a2c-smcp/protocol";
import {
  ConnectError,
  ProtocolVersionError,
  protocolErrorFromWire,
  type ConnectFailure,
} from "./errors.ts";

interface XhrLike {
  responseText?: unknown;
  statusText?: unknown;
  getResponseHeader?: (name: string) => unknown;
}

interface SystemError {
  code?: unknown;
  message?: unknown;
}

/** Where the failed connect went: named in the error's message. */
export interface ConnectTarget {
  url: string;
  /** The handshake timeout, for the message of a `timeout`. */
  timeoutMs?: number;
}

function parseBody(text: unknown): unknown {
  if (typeof text !== "string" || text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The Node error under an engine.io transport error: the XHR's or the WebSocket's. */
function systemErrorOf(e: { description?: unknown; context?: unknown }): SystemError | undefined {
  const candidates = [
    (e.context as XhrLike | undefined)?.statusText,
    e.description,
    (e.description as { error?: unknown } | undefined)?.error,
  ];
  for (const c of candidates) {
    if (typeof c === "object" && c !== null && typeof (c as SystemError).code === "string") {
      return c;
    }
  }
  return undefined;
}

const DNS = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME"]);
const UNREACHABLE = new Set(["EHOSTUNREACH", "ENETUNREACH", "ECONNRESET", "EPIPE", "ENETDOWN"]);

/** A network failure as a reason and a short phrase (the code is appended by the caller). */
function describeSystemError(sys: SystemError): [ConnectFailure, string] {
  const code = String(sys.code);
  const text = typeof sys.message === "string" ? sys.message : "";
  if (code === "ECONNREFUSED") return ["refused", "connection refused"];
  if (DNS.has(code)) {
    return ["dns", code === "EAI_AGAIN" ? "host name lookup failed" : "host not found"];
  }
  if (UNREACHABLE.has(code)) {
    return ["unreachable", code === "ECONNRESET" ? "connection reset" : "host unreachable"];
  }
  if (code === "ETIMEDOUT") return ["timeout", "connection timed out"];
  if (/wrong version number|packet length too long|unknown protocol/.test(text)) {
    return ["tls", "TLS handshake failed: the Server does not speak TLS there"];
  }
  if (code === "EPROTO" || /CERT|SSL|TLS|SIGNATURE|ISSUER/.test(code)) {
    return ["tls", `TLS handshake failed: ${text.split("\n")[0] || code}`];
  }
  return ["other", text.split("\n")[0] || code];
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

export function classifyConnectError(err: unknown, target: ConnectTarget = { url: "" }): Error {
  const e = err as {
    message?: unknown;
    data?: unknown;
    type?: unknown;
    description?: unknown;
    context?: unknown;
  };
  if (isErrorPayload(e.data)) return protocolErrorFromWire(e.data);

  const { url } = target;
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
      return new ConnectError(url, "http", `the handshake got HTTP ${description}`, {
        cause: err,
        status: description,
      });
    }
    if (typeof description === "object" && description !== null && description.code === 4900) {
      return versionClose4900();
    }
    const sys = systemErrorOf(e);
    if (sys) {
      const [reason, phrase] = describeSystemError(sys);
      const code = String(sys.code);
      return new ConnectError(url, reason, `${phrase} (${code})`, { cause: err, systemCode: code });
    }
  }
  const msg = typeof e.message === "string" ? e.message : String(err);
  if (msg === "timeout") {
    const within = target.timeoutMs !== undefined ? ` within ${seconds(target.timeoutMs)}` : "";
    return new ConnectError(url, "timeout", `no answer to the handshake${within}`, { cause: err });
  }
  return new ConnectError(url, "other", msg, { cause: err });
}

/** A URL the client can connect to, or the ConnectError saying why not. */
export function checkServerUrl(url: string): ConnectError | undefined {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed && /^(https?|wss?):$/.test(parsed.protocol) && parsed.host !== "") return undefined;
  return new ConnectError(url, "invalid_url", "not an http:// or https:// URL");
}

/** The WebSocket close code a WS-only version rejection uses. */
export const WS_CLOSE_VERSION = 4900;

/** "else raise with code 4900 and empty version fields". */
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
