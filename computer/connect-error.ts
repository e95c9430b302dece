/**
 * Which `connect_error`s are final. A refused token (401, D4) or a protocol version the Server does
 * not speak (HTTP 400 + 4008, D1: a client must not retry it silently) will not get better by
 * reconnecting, so the Computer stops and says why. Anything else (Server down, network) is
 * retried by socket.io's reconnection loop.
 */
import { isErrorPayload } from "@a2c-smcp/protocol";

export type ConnectFailure =
  "unauthorized" | "version_mismatch" | "rejected" | "join_refused" | "timeout";

export class ComputerConnectError extends Error {
  override readonly name = "ComputerConnectError";
  constructor(
    readonly kind: ConnectFailure,
    message: string,
    readonly code?: number,
    readonly payload?: Record<string, unknown>,
  ) {
    super(message);
  }
}

interface EngineError {
  data?: unknown;
  description?: unknown;
  context?: { responseText?: unknown; status?: unknown };
}

/** A final error for `err`, or `null` when reconnecting may help. */
export function describeConnectError(err: Error): ComputerConnectError | null {
  const e = err as Error & EngineError;
  // Middleware refusal: socket.io puts the flat ErrorPayload in `err.data`.
  if (isErrorPayload(e.data)) {
    const kind = e.data.code === 401 ? "unauthorized" : "rejected";
    return new ComputerConnectError(kind, `connect refused: ${e.data.message}`, e.data.code);
  }
  // Version gate: HTTP 400 on the polling handshake, body is a flat ErrorPayload.
  if (e.description === 400) {
    let body: unknown;
    try {
      const text = e.context?.responseText;
      body = typeof text === "string" ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (isErrorPayload(body) && body.code === 4008) {
      return new ComputerConnectError(
        "version_mismatch",
        `protocol version mismatch: server ${String(body.server_version)}, client ${String(body.client_version)}`,
        4008,
        body,
      );
    }
    const message = isErrorPayload(body) ? body.message : "HTTP 400";
    return new ComputerConnectError("rejected", `handshake rejected: ${message}`, 400);
  }
  return null;
}
