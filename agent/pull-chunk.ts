/**
 * Chunk validation and placement for the pull loop. An answer is never trusted: it must start
 * where it was asked, be no longer than asked, stay inside `total_size`, have an `eof` that agrees
 * with its length, and carry the read's `total_size` / `sha256` / `mime_type` (else the blob
 * drifted and the read restarts from 0). Then its bytes are decoded straight into the sink.
 */
import type { GetBlobRet } from "@a2c-smcp/protocol";
import { ChunkContractError } from "./errors.ts";
import { Restart } from "./pull-resume.ts";
import type { DecodeTarget } from "./pull-types.ts";
import type { Sink } from "./sinks.ts";

/** A planned request: `len` bytes from `offset`. */
export interface Work {
  offset: number;
  len: number;
}

/** What the chunk at offset 0 taught; every later answer must agree with it. */
export interface BlobIdentity {
  total: number;
  sha: string;
  mime: string;
}

/** Decoded length of a padded standard base64 string, or -1 if its length is impossible. */
function base64Length(s: string): number {
  if (s.length % 4 !== 0) return -1;
  let pad = 0;
  if (s.endsWith("==")) pad = 2;
  else if (s.endsWith("=")) pad = 1;
  return (s.length / 4) * 3 - pad;
}

/**
 * Replaces a well-formed base64 `blob` of a raw get_blob ack by its bytes, in place, inside
 * socket.io's ack callback. Why: in spec mode every chunk arrives as ~88 KB strings; held through
 * the promise chain to the pull loop they are often alive when a scavenge runs, get promoted, and
 * fill the old generation with dead chunks between full collections, growing the Agent's memory
 * with the blob. A string that dies within the callback is never promoted. Anything
 * malformed is left as it came, for `checkChunk` / `placeChunk` to reject as before.
 */
export function decodeBlobEarly(args: unknown[], into?: DecodeTarget): void {
  const ret = args[0] as { blob?: unknown } | null | undefined;
  if (typeof ret !== "object" || ret === null || typeof ret.blob !== "string") return;
  const s = ret.blob;
  const len = base64Length(s);
  if (len <= 0) return;
  const bytes = into ? into.take(len) : Buffer.allocUnsafe(len);
  if (!bytes) return;
  if (bytes.write(s, 0, len, "base64") !== len) {
    into?.give(bytes);
    return;
  }
  ret.blob = bytes;
}

/** Decoded byte length of an answer's `blob`. */
export function blobLength(ret: GetBlobRet): number {
  const b = ret.blob;
  if (typeof b === "string") return base64Length(b);
  return b.byteLength;
}

/** Validates an answer against what was asked; returns its decoded length. */
export function checkChunk(w: Work, ret: GetBlobRet, { total, sha, mime }: BlobIdentity): number {
  if (ret.total_size !== total || ret.sha256 !== sha || ret.mime_type !== mime) {
    throw new Restart("drift");
  }
  const at = w.offset;
  if (ret.chunk_offset !== at) {
    throw new ChunkContractError(at, `answer starts at ${ret.chunk_offset}, not where asked`);
  }
  const len = blobLength(ret);
  if (len < 0) throw new ChunkContractError(at, "blob is not valid base64");
  if (len > w.len) throw new ChunkContractError(at, `${len} bytes, more than the ${w.len} asked`);
  if (at + len > total) throw new ChunkContractError(at, `overruns total_size ${total}`);
  if (ret.eof !== (at + len === total)) {
    throw new ChunkContractError(at, `eof=${ret.eof} disagrees with ${len} bytes of ${total}`);
  }
  if (len === 0 && at < total) throw new ChunkContractError(at, "empty chunk without eof");
  return len;
}

/** Puts the answer's bytes into a region (or adopts a binary buffer); returns [bytes, owned]. */
export function placeChunk<R>(
  sink: Sink<R>,
  ret: GetBlobRet,
  len: number,
  region?: Buffer,
): [Buffer, boolean] {
  const b = ret.blob;
  // Decoded in the ack callback straight into this chunk's own region (see decodeBlobEarly).
  if (region !== undefined && b === region) return [region, true];
  if (typeof b === "string") {
    const region = sink.region(ret.chunk_offset, len);
    const written = len === 0 ? 0 : region.write(b, 0, len, "base64");
    if (written !== len) {
      sink.discard(region);
      throw new ChunkContractError(ret.chunk_offset, "blob is not valid base64");
    }
    return [region, true];
  }
  const bytes = Buffer.isBuffer(b)
    ? b
    : b instanceof Uint8Array
      ? Buffer.from(b.buffer, b.byteOffset, b.byteLength)
      : Buffer.from(b);
  if (sink.inPlace) {
    const region = sink.region(ret.chunk_offset, len);
    bytes.copy(region);
    return [region, true];
  }
  return [bytes, false];
}
