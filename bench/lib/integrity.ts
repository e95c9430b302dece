/**
 * Integrity is the one thing the bench asserts: every data point verifies the sha256 of what it
 * moved, and a wrong byte anywhere fails the whole run (non-zero exit) after the report is written.
 */
import { createHash } from "node:crypto";

/** A byte that disagrees with its digest. Never caught and ignored. */
export class IntegrityError extends Error {
  override name = "IntegrityError";
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Throws IntegrityError with `what` when the digests differ. */
export function expectDigest(what: string, actual: string, expected: string): void {
  if (actual !== expected) {
    throw new IntegrityError(`${what}: sha256 ${actual} does not match expected ${expected}`);
  }
}

/** Running totals a section adds to, and failures it records; both end up in the report. */
export class IntegrityLedger {
  verifiedChunks = 0;
  verifiedBytes = 0;
  verifiedResources = 0;
  readonly failures: string[] = [];

  add(chunks: number, bytes: number, resources = 0): void {
    this.verifiedChunks += chunks;
    this.verifiedBytes += bytes;
    this.verifiedResources += resources;
  }

  fail(message: string): void {
    this.failures.push(message);
  }
}
