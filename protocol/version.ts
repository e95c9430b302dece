/**
 * Protocol identity: the version this stack speaks, the namespace every event lives in, the
 * compatibility rule the Server's version gate applies (protocol.md §1.1–§1.3; D1–D2), and the
 * version each wire feature appeared in. Moving to another version changes this file only: the
 * constant, and a row in PROTOCOL_FEATURES for what it adds.
 */

/** The version every client puts in its `a2c_version` query parameter. Never user input. */
export const PROTOCOL_VERSION = "0.4.0";

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

/**
 * The version each wire feature of this stack appeared in. In 0.x a handshake needs equal
 * minors, so a peer past the gate speaks them all; the table is for the checks a role makes on
 * its own constant (an upload needs 0.4: upstream's `upload_unsupported_by_sdk`).
 */
export const PROTOCOL_FEATURES = {
  /** `client:get_blob` and 4018 (0.3.0). */
  getBlob: "0.3.0",
  /** `pickString` inputs carry `options: [{label, value}]` (0.3.2, breaking). */
  pickStringOptionObjects: "0.3.2",
  /** `client:put_blob`, 4019 and the Computer's landing root (0.4.0). */
  putBlob: "0.4.0",
  /** `A2CSkillRef.tags` from SKILL.md frontmatter (0.4.0). */
  skillTags: "0.4.0",
  /** `a2c_tool_meta` merged from three layers, server-declared `tags` the lowest (0.4.0). */
  toolMetaLayers: "0.4.0",
} as const;
export type ProtocolFeature = keyof typeof PROTOCOL_FEATURES;

/** Whether a peer speaking `version` has `feature` (same major, at or after its version). */
export function supportsFeature(version: string, feature: ProtocolFeature): boolean {
  const v = parseVersion(version);
  const since = parseVersion(PROTOCOL_FEATURES[feature])!;
  if (!v || v.major !== since.major) return false;
  if (v.minor !== since.minor) return v.minor > since.minor;
  return v.patch >= since.patch;
}
