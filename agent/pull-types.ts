/**
 * The pull loop's defaults, options, results and the `ChunkFetcher` seam it pulls through. Kept
 * in a module of their own so the loop's parts (`pull-run.ts`, `pull-window.ts`,
 * `pull-reassembly.ts`, `pull-chunk.ts`, `pull-resume.ts`), `pull.ts` and `client.ts` share them
 * without an import cycle.
 */
import type { GetBlobRet } from "@a2c-smcp/protocol";
import type { BlobCache } from "./cache.ts";
import type { AgentLogger } from "./logger.ts";

/**
 * Chunks in flight at different offsets after the first (the bench's sweep section measures the
 * choice). Memory stays bounded whatever the blob's size: file and stream sinks hold at most
 * 2 × window chunks besides their own write batch.
 */
export const DEFAULT_WINDOW = 16;
/**
 * Raw bytes per chunk carried as base64: small enough that a chunk's string stays below the size
 * (about 96 KiB of bytes) from which every base64 string costs fresh pages to build and decode.
 * A read that asked for binary carriage and got base64 switches to this size after its first
 * chunk, unless `chunkBytes` was given.
 */
export const DEFAULT_BASE64_CHUNK_BYTES = 64 * 1024;
/** Raw bytes per chunk with binary carriage (D19): no base64 string, so bigger is cheaper. */
export const DEFAULT_BINARY_CHUNK_BYTES = 512 * 1024;
/** Consecutive resume attempts (Computer gone, socket dropped, relay timeout) without progress. */
export const DEFAULT_RETRIES = 8;
/** Whole re-reads from offset 0 after drift or a final sha256 mismatch. */
export const DEFAULT_REREADS = 2;
/** How long one resume waits for the Computer to come back. */
export const DEFAULT_RESUME_TIMEOUT_MS = 120_000;

/** How a chunk's bytes travelled: a base64 string (the spec's form) or a binary attachment (D19). */
export type Carriage = "base64" | "binary";

export interface ChunkRequest {
  offset: number;
  maxChunkBytes: number;
  /** Ask for `blob_format: "binary"` (D19); false sends no `blob_format` at all. */
  binary: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Decode a base64 `blob` inside the ack callback, before any promise holds the string (see
   * `decodeBlobEarly` in pull-chunk.ts): into `decodeInto.take(len)` when given (the pull loop
   * hands out the chunk's own region), else into a fresh Buffer when `decodeEarly` is set.
   */
  decodeEarly?: boolean;
  decodeInto?: DecodeTarget;
}

/** Where an early-decoded chunk goes; `undefined` from `take` leaves the blob a string. */
export interface DecodeTarget {
  take(len: number): Buffer | undefined;
  give(bytes: Buffer): void;
}

/** What the pull loop needs from a connection (`AgentClient` implements it). */
export interface ChunkFetcher {
  /** Where the pull loop reports resumes and restarts. Default: nowhere. */
  readonly logger?: AgentLogger;
  /** One raw `client:get_blob`, validated; a flat error is thrown as a typed error. */
  getBlobChunk(computer: string, handle: string, req: ChunkRequest): Promise<GetBlobRet>;
  /**
   * Resolves once our socket is connected and joined and `computer` is in the office again
   * (asking the Server for the office list first, so a stale view cannot mislead the wait).
   */
  waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void>;
}

export interface PullProgress {
  /** Bytes of the current read held so far (in any order). */
  bytes: number;
  total: number;
}

export interface PullOptions {
  /** Chunks in flight at once after the first. Default `DEFAULT_WINDOW` (16). */
  window?: number;
  /**
   * Sent as `max_chunk_bytes`. Default 512 KiB with binary carriage, 64 KiB with base64 (also
   * after a Computer answered a binary request in base64).
   */
  chunkBytes?: number;
  /**
   * Ask for binary carriage (`blob_format: "binary"`, D19). Default true: a Computer that does
   * not honour it answers base64 and the read goes on in base64. `false` is the spec's mode: no
   * `blob_format` is sent at all. Either form of an answer is always accepted.
   */
  binary?: boolean;
  signal?: AbortSignal;
  /** Called after every accepted chunk. */
  onProgress?: (p: PullProgress) => void;
  /** The producer's `sha256`: a Computer now serving other bytes is a `BlobChangedError`. */
  expectedSha256?: string;
  /** The producer's `total_size`, checked like `expectedSha256`. */
  expectedSize?: number;
  /** Consecutive resumes without progress before giving up. Default 8. */
  retries?: number;
  /** Re-reads from 0 after drift / final mismatch. Default 2. */
  rereads?: number;
  /** Local ack wait per chunk (the client's default when absent, ≥ 30 s). */
  timeoutMs?: number;
  /** Longest wait for the Computer to come back during one resume. Default 120 s. */
  resumeTimeoutMs?: number;
  /** Content-addressed cache: a hit pulls nothing; a verified pull is stored. */
  cache?: BlobCache;
}

export interface PullStats {
  /** `client:get_blob` requests sent. */
  requests: number;
  /** Decoded bytes accepted from answers, every read included. */
  bytesReceived: number;
  /** Reads restarted from offset 0 (drift, mismatch, range). */
  restarts: number;
  /** Resumes after a Computer / socket came back. */
  resumes: number;
  /** The bytes came from the local cache. */
  fromCache: boolean;
}

export interface PullInfo {
  totalSize: number;
  sha256: string;
  mimeType: string;
  /**
   * How the verified read's chunks travelled: `binary` when every one came as a binary
   * attachment, `base64` when any came as a string; `null` when the bytes came from the cache.
   */
  carriage: Carriage | null;
  stats: PullStats;
}
