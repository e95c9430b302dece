/**
 * The windowed chunk driver: the same loop pulls through the bare socket.io relay, through our
 * stack and over plain HTTP Range, so the only difference between those numbers is what sits
 * between the driver and the file.
 *
 * `window` workers each take the next offset of a cyclic walk over the file (0, c, 2c, … wrapping
 * around), so windows larger than a file's chunk count still keep `window` requests in flight.
 * Every answer is checked before it counts: its offset is the one asked, its length is exactly the
 * expected one, `eof` is right, the reported whole-resource sha256 (when the carrier reports one)
 * is the file's, and the sha256 of its bytes equals the digest of that chunk of the source file.
 */
import { createHash } from "node:crypto";
import { IntegrityError } from "./integrity.ts";
import { summarize, mbPerSec, type LatencySummary } from "./stats.ts";

export interface Chunk {
  offset: number;
  bytes: Uint8Array;
  /** Whole-resource sha256 as reported by the carrier, or null (HTTP reports none). */
  sha256: string | null;
  totalSize: number;
  eof: boolean;
}

export type FetchChunk = (offset: number, size: number) => Promise<Chunk>;

export interface DriveOptions {
  totalSize: number;
  sha256: string;
  chunkBytes: number;
  window: number;
  durationMs: number;
  /** sha256 of every chunk of the source at `chunkBytes` granularity (see data.ts fileDigests). */
  chunkDigests: readonly string[];
  /** Stop early after this many chunks (0 = only the clock stops it). */
  maxChunks?: number;
}

export interface DriveResult {
  bytes: number;
  chunks: number;
  seconds: number;
  mbps: number;
  /** Full walks over the file (chunks / chunks per file). */
  passes: number;
  latencyMs: LatencySummary;
}

/** Checks one answer against what was asked; throws IntegrityError on a byte-level mismatch. */
export function verifyChunk(chunk: Chunk, askedOffset: number, opts: DriveOptions): void {
  const index = askedOffset / opts.chunkBytes;
  const expectedLen = Math.min(opts.chunkBytes, opts.totalSize - askedOffset);
  if (chunk.offset !== askedOffset) {
    throw new IntegrityError(`chunk asked at ${askedOffset} came back at ${chunk.offset}`);
  }
  if (chunk.totalSize !== opts.totalSize) {
    throw new IntegrityError(
      `total_size ${chunk.totalSize} != ${opts.totalSize} at ${askedOffset}`,
    );
  }
  if (chunk.sha256 !== null && chunk.sha256 !== opts.sha256) {
    throw new IntegrityError(`reported sha256 ${chunk.sha256} != source ${opts.sha256}`);
  }
  if (chunk.bytes.length !== expectedLen) {
    throw new IntegrityError(
      `chunk at ${askedOffset}: ${chunk.bytes.length} bytes, expected ${expectedLen} (chunk size ${opts.chunkBytes})`,
    );
  }
  if (chunk.eof !== (askedOffset + expectedLen === opts.totalSize)) {
    throw new IntegrityError(`eof ${String(chunk.eof)} wrong at ${askedOffset}`);
  }
  const digest = createHash("sha256").update(chunk.bytes).digest("hex");
  if (digest !== opts.chunkDigests[index]) {
    throw new IntegrityError(
      `chunk at ${askedOffset}: sha256 of its bytes does not match the source`,
    );
  }
}

export async function drive(fetch: FetchChunk, opts: DriveOptions): Promise<DriveResult> {
  const perFile = Math.ceil(opts.totalSize / opts.chunkBytes);
  if (perFile !== opts.chunkDigests.length) {
    throw new Error(
      `digest table has ${opts.chunkDigests.length} entries, file has ${perFile} chunks`,
    );
  }
  const latencies: number[] = [];
  let next = 0;
  let bytes = 0;
  const start = performance.now();
  const limit = opts.maxChunks ?? 0;
  // With a chunk budget and no duration, only the budget stops the walk.
  const deadline = opts.durationMs <= 0 && limit > 0 ? Infinity : start + opts.durationMs;
  let failed = false;

  const loop = async (): Promise<void> => {
    for (;;) {
      if (failed) return;
      if (performance.now() >= deadline && next > 0) return;
      if (limit > 0 && next >= limit) return;
      const k = next++;
      const offset = (k % perFile) * opts.chunkBytes;
      const size = Math.min(opts.chunkBytes, opts.totalSize - offset);
      const t0 = performance.now();
      const chunk = await fetch(offset, size);
      latencies.push(performance.now() - t0);
      verifyChunk(chunk, offset, opts);
      bytes += chunk.bytes.length;
    }
  };
  // One failure stops every worker (no requests keep going after the point has failed).
  const worker = (): Promise<void> =>
    loop().catch((err: unknown) => {
      failed = true;
      throw err;
    });
  await Promise.all(Array.from({ length: opts.window }, () => worker()));
  const seconds = (performance.now() - start) / 1000;
  return {
    bytes,
    chunks: latencies.length,
    seconds,
    mbps: mbPerSec(bytes, seconds),
    passes: latencies.length / perFile,
    latencyMs: summarize(latencies),
  };
}
