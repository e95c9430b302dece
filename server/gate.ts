/**
 * The version gate (D1; docs/protocol.md, "Connection"). It runs on raw HTTP requests and WebSocket
 * upgrades BEFORE engine.io or socket.io see them, so no socket.io handler — buggy or not — can
 * admit an incompatible client: "MUST run at the HTTP layer before Engine.IO/Socket.IO business
 * code" and "MUST cover both the polling handshake and a direct WebSocket upgrade".
 *
 * Every engine.io request is gated, not only the handshake: socket.io-client copies the query into
 * each polling request and the upgrade, so a compatible client always passes.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ERROR_CODE_HEADER,
  VERSION_QUERY_PARAM,
  invalidVersion,
  isCompatible,
  missingVersion,
  parseVersion,
  supportedRange,
  versionMismatch,
  type ErrorPayload,
  type SemVer,
} from "@a2c-smcp/protocol";

/** What the gate decided about one request. */
export type GateDecision =
  | { ok: true; clientVersion: string }
  | { ok: false; status: 400; body: ErrorPayload; headers: Record<string, string> };

/** Reads `a2c_version` from a request URL (first occurrence), tolerating junk URLs. */
export function readVersionParam(url: string | undefined): string | null {
  try {
    return new URL(url ?? "/", "http://gate.invalid").searchParams.get(VERSION_QUERY_PARAM);
  } catch {
    return null;
  }
}

export function decide(
  rawVersion: string | null,
  server: SemVer,
  serverText: string,
): GateDecision {
  if (rawVersion === null || rawVersion === "") {
    return refuse(missingVersion());
  }
  const client = parseVersion(rawVersion);
  if (client === null) return refuse(invalidVersion(rawVersion));
  if (!isCompatible(client, server)) {
    const range = supportedRange(server);
    const body = versionMismatch({
      server_version: serverText,
      client_version: rawVersion,
      min_supported: range.min,
      max_supported: range.max,
    });
    // "Incompatible → HTTP 400, header X-A2C-Error-Code: 4008, JSON body (flat ErrorPayload)".
    return refuse(body, { [ERROR_CODE_HEADER]: "4008" });
  }
  return { ok: true, clientVersion: rawVersion };
}

function refuse(body: ErrorPayload, extra: Record<string, string> = {}): GateDecision {
  return { ok: false, status: 400, body, headers: extra };
}

/** The exact header set and body of a refusal, shared by both transports (byte-identical body). */
function refusalParts(decision: Extract<GateDecision, { ok: false }>): {
  headers: Record<string, string>;
  body: Buffer;
} {
  const body = Buffer.from(JSON.stringify(decision.body), "utf8");
  return {
    headers: {
      "Content-Type": "application/json",
      "Content-Length": String(body.length),
      ...decision.headers,
    },
    body,
  };
}

/** Answers a refused polling request. */
export function writeRefusal(
  res: ServerResponse,
  decision: Extract<GateDecision, { ok: false }>,
): void {
  const { headers, body } = refusalParts(decision);
  res.writeHead(decision.status, headers);
  res.end(body);
}

/**
 * Answers a refused WebSocket upgrade with the same raw HTTP 400 (D1: "A WebSocket-only upgrade
 * that fails the gate gets the same raw HTTP 400 response"), then closes the TCP socket. Node's
 * `upgrade` listener owns the raw socket, so a denial response is always possible and the WS
 * close code 4900 is never needed.
 */
export function writeUpgradeRefusal(
  socket: Duplex,
  decision: Extract<GateDecision, { ok: false }>,
): void {
  const { headers, body } = refusalParts(decision);
  const head =
    `HTTP/1.1 ${decision.status} Bad Request\r\n` +
    Object.entries({ ...headers, Connection: "close" })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("") +
    "\r\n";
  socket.on("error", () => socket.destroy());
  if (socket.writable) socket.end(Buffer.concat([Buffer.from(head, "latin1"), body]));
  else socket.destroy();
}

/** Gate for one request: returns the client's version when admitted. */
export function gateRequest(
  req: IncomingMessage,
  server: SemVer,
  serverText: string,
): GateDecision {
  return decide(readVersionParam(req.url), server, serverText);
}
