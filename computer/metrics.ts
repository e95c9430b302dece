/**
 * The Computer's prom-client registry: one per Computer (tests and the stack run several in one
 * process, so nothing goes to the global default registry).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * How a pull-time sandbox check of a skill file was answered: `held`, from the descriptor the
 * engine already holds for the file; `walk`, by the full walk of the path's components.
 */
export type SandboxCheckPath = "held" | "walk";

/** What counts sandbox checks: `ComputerMetrics.sandboxChecks`, or anything with its `inc`. */
export interface SandboxCheckCounter {
  inc(labels: { path: SandboxCheckPath }): void;
}

export interface ComputerMetrics {
  readonly registry: Registry;
  /** `client:*` requests by event and outcome (`ok` or the error code). */
  readonly requests: Counter<"event" | "outcome">;
  /** `client:get_blob` failures by 4018 reason (and `busy`). */
  readonly blobErrors: Counter<"reason">;
  /** `client:get_blob` answered `busy` unread (dispatch.ts): queue_full, stale, closed. */
  readonly blobRefusals: Counter<"reason">;
  /** Resource bytes served in chunks, by carriage (`base64` text or `binary`). */
  readonly blobBytes: Counter<"carriage">;
  /**
   * Chunks of requests that asked for a content-coding (D63, D64), by the coding applied
   * (`identity` included) and why: `coded`, or why not (blob/content-coding.ts).
   */
  readonly codedChunks: Counter<"coding" | "outcome">;
  /** Their bytes: `decoded` (resource bytes) and `encoded` (what `blob` carried before base64). */
  readonly codedBytes: Counter<"coding" | "side">;
  /** Time spent compressing on the thread pool, by coding. */
  readonly codingSeconds: Counter<"coding">;
  readonly chunkSeconds: Histogram;
  /** Whole-resource sha256 computations (cache misses that ran to the end), by path. */
  readonly hashComputations: Counter<"path">;
  readonly hashCacheHits: Counter;
  /** Reads retried because the file changed while being served (D18). */
  readonly snapshotRetries: Counter;
  /** Pull-time sandbox checks of skill files (D17), by path: `held` or `walk`. */
  readonly sandboxChecks: Counter<"path">;
  /** Chunk requests being read, and waiting in their flows' queues. */
  readonly chunksInFlight: Gauge;
  readonly chunksQueued: Gauge;
  /** How long chunk requests waited in their queues before being read. */
  readonly chunkWaitSeconds: Histogram;
  /** Answer bytes the socket holds unsent (what the chunk scheduler bounds). */
  readonly unsentBytes: Gauge;
  /** Files opened to serve chunks (a chunk from a held descriptor opens none). */
  readonly blobFileOpens: Counter;
  /** Descriptors the blob engine holds open (being read, or kept for the next chunk). */
  readonly openDescriptors: Gauge;
  /** Hash jobs waiting for a thread, by lane (workers/pool.ts). */
  readonly hashQueued: Gauge<"lane">;
  /** Time a hash job waited for a thread, by lane. */
  readonly hashWaitSeconds: Histogram<"lane">;
  /** Hash jobs refused (answered busy) because their lane's queue was full, by lane. */
  readonly hashRefusals: Counter<"lane">;
  /** Writes to the spool or the derived store that failed for a disk fault (D57). */
  readonly storageFailures: Counter<"store" | "reason">;
  /** 1 while a store's writes fail for a disk fault (from the first failure to the next success). */
  readonly storageFailing: Gauge<"store">;
  /** Derived resources produced (SKILL.md bodies), by tier: memory or file. */
  readonly derivedProductions: Counter<"tier">;
  /** Bytes of derived resources held, by tier. */
  readonly derivedBytes: Gauge<"tier">;
  /** Upload sessions open (computer/upload/store.ts). */
  readonly uploadSessions: Gauge;
  /** Uploads ended, by outcome: `stored`, or the 4019 reason that ended or refused them. */
  readonly uploadOutcomes: Counter<"outcome">;
  /** Events with an ack this Computer does not handle (answered 404 `unknown_event`). */
  readonly unknownEvents: Counter;
  /** Transport fast paths (transport/index.ts) by name and state: 1 on, 0 off or unavailable. */
  readonly fastPaths: Gauge<"name" | "state">;
}

export function createComputerMetrics(name: string): ComputerMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ computer: name });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: "a2c_computer_requests_total",
      help: "client:* requests handled, by event and outcome",
      labelNames: ["event", "outcome"],
      registers,
    }),
    blobErrors: new Counter({
      name: "a2c_computer_blob_errors_total",
      help: "client:get_blob failures by reason",
      labelNames: ["reason"],
      registers,
    }),
    blobRefusals: new Counter({
      name: "a2c_computer_blob_refusals_total",
      help: "client:get_blob answered busy without being read, by reason (queue_full; stale: its answer would reach the Server after the relay timeout; closed)",
      labelNames: ["reason"],
      registers,
    }),
    blobBytes: new Counter({
      name: "a2c_computer_blob_bytes_total",
      help: "resource bytes served by client:get_blob (decoded), by carriage: base64 or binary",
      labelNames: ["carriage"],
      registers,
    }),
    codedChunks: new Counter({
      name: "a2c_computer_blob_coded_chunks_total",
      help: "client:get_blob chunks of requests that asked for a content_encoding, by the coding applied (identity included) and outcome: coded, or why not (not_offered, too_small, compressed_type, incompressible, no_gain, busy)",
      labelNames: ["coding", "outcome"],
      registers,
    }),
    codedBytes: new Counter({
      name: "a2c_computer_blob_coded_bytes_total",
      help: "bytes of those chunks by coding applied and side: decoded (resource bytes) or encoded (the blob before base64)",
      labelNames: ["coding", "side"],
      registers,
    }),
    codingSeconds: new Counter({
      name: "a2c_computer_blob_coding_seconds_total",
      help: "seconds spent compressing chunks on the thread pool, by coding",
      labelNames: ["coding"],
      registers,
    }),
    chunkSeconds: new Histogram({
      name: "a2c_computer_blob_chunk_seconds",
      help: "time to answer one client:get_blob",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2],
      registers,
    }),
    hashComputations: new Counter({
      name: "a2c_computer_hash_computations_total",
      help: "whole-resource sha256 computations, by path (pool, inline, bytes)",
      labelNames: ["path"],
      registers,
    }),
    hashCacheHits: new Counter({
      name: "a2c_computer_hash_cache_hits_total",
      help: "sha256 answered from the content-signature cache",
      registers,
    }),
    snapshotRetries: new Counter({
      name: "a2c_computer_blob_snapshot_retries_total",
      help: "chunk reads retried because the source changed while being served",
      registers,
    }),
    sandboxChecks: new Counter({
      name: "a2c_computer_sandbox_checks_total",
      help: "pull-time sandbox checks of skill files, by path: held (shown from the descriptor the engine holds) or walk (every path component checked)",
      labelNames: ["path"],
      registers,
    }),
    chunksInFlight: new Gauge({
      name: "a2c_computer_blob_in_flight",
      help: "client:get_blob requests being read",
      registers,
    }),
    chunksQueued: new Gauge({
      name: "a2c_computer_blob_queued",
      help: "client:get_blob requests waiting in their flows' queues",
      registers,
    }),
    chunkWaitSeconds: new Histogram({
      name: "a2c_computer_blob_queue_wait_seconds",
      help: "time a client:get_blob waited in its flow's queue before its read started",
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 5, 15],
      registers,
    }),
    unsentBytes: new Gauge({
      name: "a2c_computer_unsent_bytes",
      help: "answer bytes the Computer's socket holds unsent (engine.io write buffer and ws/TCP socket buffer)",
      registers,
    }),
    blobFileOpens: new Counter({
      name: "a2c_computer_blob_file_opens_total",
      help: "files opened to serve client:get_blob (a chunk served from a held descriptor opens none)",
      registers,
    }),
    openDescriptors: new Gauge({
      name: "a2c_computer_blob_open_descriptors",
      help: "file descriptors the blob engine holds open (being read or kept for the next chunk)",
      registers,
    }),
    hashQueued: new Gauge({
      name: "a2c_computer_hash_queued",
      help: "hash jobs waiting for a thread, by lane (small: files up to 16 MiB; large)",
      labelNames: ["lane"],
      registers,
    }),
    hashWaitSeconds: new Histogram({
      name: "a2c_computer_hash_wait_seconds",
      help: "time a hash job waited for a thread, by lane",
      labelNames: ["lane"],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 2, 10, 30],
      registers,
    }),
    hashRefusals: new Counter({
      name: "a2c_computer_hash_refusals_total",
      help: "hash jobs refused busy because their lane's queue was full, by lane",
      labelNames: ["lane"],
      registers,
    }),
    storageFailures: new Counter({
      name: "a2c_computer_storage_failures_total",
      help: "writes to the state directory that failed for a disk fault, by store (spool, derived, uploads: the landing root) and reason (storage_full: ENOSPC/EDQUOT; storage_error: EIO/EROFS)",
      labelNames: ["store", "reason"],
      registers,
    }),
    storageFailing: new Gauge({
      name: "a2c_computer_storage_failing",
      help: "1 while a store's writes fail for a disk fault (first failure to the next success), by store",
      labelNames: ["store"],
      registers,
    }),
    derivedProductions: new Counter({
      name: "a2c_computer_derived_productions_total",
      help: "derived resources (stripped SKILL.md bodies) produced, by tier (memory, file)",
      labelNames: ["tier"],
      registers,
    }),
    derivedBytes: new Gauge({
      name: "a2c_computer_derived_bytes",
      help: "bytes of derived resources held, by tier (memory, file)",
      labelNames: ["tier"],
      registers,
    }),
    uploadSessions: new Gauge({
      name: "a2c_computer_upload_sessions",
      help: "client:put_blob upload sessions open (bounded by --upload-max-concurrent)",
      registers,
    }),
    uploadOutcomes: new Counter({
      name: "a2c_computer_upload_outcomes_total",
      help: "client:put_blob chunks answered 4019, by reason, and uploads stored (outcome=stored)",
      labelNames: ["outcome"],
      registers,
    }),
    unknownEvents: new Counter({
      name: "a2c_computer_unknown_events_total",
      help: "events with an ack this Computer does not handle, answered 404 unknown_event",
      registers,
    }),
    fastPaths: new Gauge({
      name: "a2c_transport_fast_path",
      help: "Transport fast paths of this Computer (computer/transport/index.ts): 1 = on; 0 = off by option or unavailable in the installed libraries (state label; the reason is in /healthz and the log)",
      labelNames: ["name", "state"],
      registers,
    }),
  };
}
