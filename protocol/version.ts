/**
 * Protocol identity: the version this stack speaks, the namespace every event lives in, and the
 * compatibility rule the Server's version gate applies (protocol.md §1.1–§1.3; D1–D2).
 */

/** The version every client puts in its `a2c_version` query parameter. Never user input. */
export const PROTOCOL_VERSION = "0.3.0";

/** The one socket.io namespace for every protocol event (a protocol constant). */
export const NAMESPACE = "/smcp";

/** Engine.IO mount path by default. Not a protocol constant: configurable on every role. */
export const DEFAULT_ENGINE_PATH = "/socket.io/";

/** Query parameter that carries the client's protocol version. */
export const VERSION_QUERY_PARAM = "a2c_version";

/** Response header that names the A2C code of a rejected handshake (diagnostic fallback). */
export const ERROR_CODE_HEADER = "X-A2C-Error-Code";

export interface SemVer {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

const SEMVER = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;

/** Parses exactly three non-negative integer parts; anything else (suffixes, spaces) is `null`. */
export function parseVersion(text: string): SemVer | null {
  const m = SEMVER.exec(text);
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

/**
 * v0.x: MAJOR and MINOR equal, PATCH free. v1+: MAJOR equal and client MINOR <= server MINOR.
 */
export function isCompatible(client: SemVer, server: SemVer): boolean {
  if (client.major !== server.major) return false;
  if (server.major === 0) return client.minor === server.minor;
  return client.minor <= server.minor;
}

/** The range a server of `server` version accepts, as the 4008 body spells it. */
export function supportedRange(server: SemVer): { min: string; max: string } {
  if (server.major === 0) {
    return { min: `0.${server.minor}.0`, max: `0.${server.minor}.999` };
  }
  return { min: `${server.major}.0.0`, max: `${server.major}.${server.minor}.999` };
}
