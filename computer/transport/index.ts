/**
 * How the Computer's answers leave: the one place that departs from the stock behaviour of
 * socket.io-client, engine.io-client and ws. The rest of the Computer sees two things: the
 * buffers the blob engine reads binary chunks into (`chunkBuffers`), and `answer(ack, result)`.
 *
 * The stock transport uses the libraries' public API only: a fresh Buffer per binary chunk and
 * the plain ack. The fast paths (fast-paths.ts) each change one thing underneath:
 * - `lend_buffers` (lent-buffers.ts): chunk buffers come from a pool and return to it once the
 *   engine has drained;
 * - `mask_in_place` (in-place-masking.ts): ws masks those buffers in place, not a copy of them;
 * - `batch_writes` (batched-writes.ts): one flush and one `writev` per answer.
 */
import { BufferPool, freshChunkBuffers, type ChunkBuffers } from "../blob/buffers.ts";
import type { FastPaths } from "../fast-paths.ts";
import { batchWrites } from "./batched-writes.ts";
import type { ClientManager } from "./client-stack.ts";
import { InPlaceMasking } from "./in-place-masking.ts";
import { TransportChunkBuffers, type LentBufferCounts } from "./lent-buffers.ts";

export type Ack = (result: unknown) => void;

export interface AnswerTransport {
  /** Where the blob engine reads binary chunks into (it answers with a subarray of one). */
  readonly chunkBuffers: ChunkBuffers;
  /** Sends `result` as the answer of one request through its socket.io ack. */
  answer(ack: Ack, result: unknown): void;
  /** Chunk buffers returned to the pool or dropped after their answers. */
  readonly lent: LentBufferCounts;
}

/** Fresh buffers and the plain ack: the libraries' own behaviour. */
export const stockTransport: AnswerTransport = {
  chunkBuffers: freshChunkBuffers,
  answer: (ack, result) => ack(result),
  lent: { returned: 0, dropped: 0 },
};

export interface TransportOptions {
  /** Size classes of pooled chunk buffers (blob/buffers.ts `chunkSizeClasses`). */
  chunkSizes: number[];
  /** Free buffers kept per class, and lent buffers pending per engine: the reads in flight. */
  maxPending: number;
}

/** The transport of `manager` (the Computer's socket.io-client Manager) with `paths` applied. */
export function createAnswerTransport(
  manager: ClientManager,
  paths: FastPaths,
  options: TransportOptions,
): AnswerTransport {
  if (paths.on("batch_writes")) {
    batchWrites(manager, (reason) => paths.unavailable("batch_writes", reason));
  }
  const lend = paths.on("lend_buffers");
  const mask = paths.on("mask_in_place");
  if (!lend && !mask) return stockTransport;
  const buffers = new TransportChunkBuffers({
    ...(lend ? { pool: new BufferPool(options.chunkSizes, options.maxPending) } : {}),
    maxPending: options.maxPending,
    unavailable: (reason) => paths.unavailable("lend_buffers", reason),
  });
  const masking = mask
    ? new InPlaceMasking(manager, (reason) => paths.unavailable("mask_in_place", reason))
    : undefined;
  return {
    chunkBuffers: buffers,
    lent: buffers,
    answer(ack, result) {
      const blob = (result as { blob?: unknown } | null)?.blob;
      const own = Buffer.isBuffer(blob) ? buffers.claim(blob) : undefined;
      if (own) masking?.allow(blob as Buffer);
      ack(result);
      // The ack has been written into the current engine (socket.io encodes and writes
      // synchronously); a pooled buffer goes back once that engine has drained.
      if (own) buffers.hold(manager.engine, own);
    },
  };
}
