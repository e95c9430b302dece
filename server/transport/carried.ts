/**
 * What one answer carried, for `a2c_relay_resource_bytes_total`: the decoded resource bytes of a
 * get_blob `blob` (base64 text or a binary attachment) or a get_skill `body`, measured without
 * serializing or decoding anything (D13: the relay never rebuilds `blob`).
 */

/**
 * How an ack carried resource bytes: `blob` as base64 text or a binary attachment, or `body`
 * inline as text (the `carriage` label of `a2c_relay_resource_bytes_total`).
 */
export type Carriage = "base64" | "binary" | "inline";

/** What an ack carried: its decoded resource bytes and their carriage (null: nothing). */
export interface Carried {
  bytes: number;
  carriage: Carriage | null;
}

export const NOTHING: Carried = { bytes: 0, carriage: null };

/**
 * Decoded bytes of base64 text of `length` characters whose last two are `last` and
 * `beforeLast` (char codes): arithmetic on the length and the padding, never a decode.
 */
export function base64Bytes(length: number, last: number, beforeLast: number): number {
  const EQ = 0x3d; /* = */
  const pad = last === EQ ? (beforeLast === EQ ? 2 : 1) : 0;
  return Math.max(0, Math.floor((length * 3) / 4) - pad);
}

/** The decoded bytes `value` stands for as the `key` of an answer. */
export function carriedBy(key: "blob" | "body", value: string): Carried {
  if (key === "body") return { bytes: Buffer.byteLength(value, "utf8"), carriage: "inline" };
  const n = value.length;
  return {
    bytes: base64Bytes(n, value.charCodeAt(n - 1), value.charCodeAt(n - 2)),
    carriage: "base64",
  };
}

/** What a decoded answer (an ack's first argument as a value) carried. */
export function carriedOf(answer: unknown): Carried {
  if (typeof answer !== "object" || answer === null) return NOTHING;
  const a = answer as { blob?: unknown; body?: unknown };
  if (typeof a.blob === "string") return carriedBy("blob", a.blob);
  if (a.blob instanceof Uint8Array || a.blob instanceof ArrayBuffer) {
    return { bytes: a.blob.byteLength, carriage: "binary" };
  }
  if (a.blob === undefined && typeof a.body === "string") return carriedBy("body", a.body);
  return NOTHING;
}
