/**
 * Raw HTTP helpers for handshake tests: an engine.io polling handshake and a direct WebSocket
 * upgrade, both without socket.io-client, so tests see the exact status, headers and body bytes.
 */
import { request } from "node:http";
import { randomBytes } from "node:crypto";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** `?EIO=4&transport=polling` plus `query` (pass `a2c_version` yourself, or not). */
export function engineUrl(baseUrl: string, enginePath: string, query: string): string {
  return `${baseUrl}${enginePath}?EIO=4&transport=polling${query ? `&${query}` : ""}`;
}

/** GET a polling handshake; resolves with status, headers and the raw body. */
export function pollingHandshake(url: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * A direct WebSocket upgrade (`transport=websocket`, no polling first). Resolves with the HTTP
 * response when the Server refuses, or `{status: 101}` when it switches protocols.
 */
export function websocketUpgrade(
  baseUrl: string,
  enginePath: string,
  query: string,
): Promise<RawResponse> {
  const url = `${baseUrl}${enginePath}?EIO=4&transport=websocket${query ? `&${query}` : ""}`;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "GET",
      agent: false,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, headers: res.headers, body: Buffer.alloc(0) });
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}
