/**
 * The upload service: `client:put_blob` into the upload store (store.ts), under the landing root
 * the operator configured (`--landing-root` / `A2C_LANDING_ROOT`, never a file a cloned project
 * could carry). Always registered, so an unconfigured Computer answers `4019 forbidden` instead
 * of "not served".
 */
import { isAbsolute, resolve } from "node:path";
import type { Logger } from "pino";
import { UPLOAD_DEFAULTS, type ErrorPayload, type PutBlobRet } from "@a2c-smcp/protocol";
import { StorageHealth, type StorageFaultMetrics } from "../blob/storage-faults.ts";
import type { ComputerService } from "../contracts.ts";
import { UploadStore, type UploadMetrics } from "./store.ts";

/** The store's bounds (`StartComputerOptions.upload`); upstream's defaults when absent. */
export interface UploadTuning {
  /** Idle time (since the last accepted chunk) after which a session is dropped, ms. */
  idleTimeoutMs?: number;
  /** Sessions open at once before a first chunk is `busy`. */
  maxConcurrent?: number;
  /** Largest declared `total_size`, bytes. */
  maxBytes?: number;
}

export interface UploadServiceOptions extends UploadTuning {
  /** Absolute directory uploads land in; unset (or not absolute): every upload is forbidden. */
  landingRoot?: string | undefined;
  log: Logger;
  /** The Computer's metrics: disk faults and the upload gauges. */
  metrics?: StorageFaultMetrics & UploadMetrics;
}

export interface UploadService extends ComputerService {
  readonly store: UploadStore;
}

export function createUploadService(options: UploadServiceOptions): UploadService {
  const { log } = options;
  let root: string | undefined;
  if (options.landingRoot !== undefined) {
    if (isAbsolute(options.landingRoot.trim())) root = resolve(options.landingRoot.trim());
    else log.error("the landing root must be an absolute path; uploads are refused (forbidden)");
  }
  const store = new UploadStore({
    root,
    idleTimeoutMs: positive(options.idleTimeoutMs, UPLOAD_DEFAULTS.idleTimeoutSeconds * 1000),
    maxConcurrent: positive(options.maxConcurrent, UPLOAD_DEFAULTS.maxConcurrent),
    maxBytes: positive(options.maxBytes, UPLOAD_DEFAULTS.maxBytes),
    log,
    health: new StorageHealth("uploads", "uploads fail", log, options.metrics),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  // The Agent asked with `blob_format` whether binary is taken: every ack says it is (D19's
  // negotiation for uploads). An upstream Agent never asks, so its acks keep their exact keys.
  const handler = async (req: Record<string, unknown>): Promise<PutBlobRet | ErrorPayload> => {
    const answer = await store.put(req);
    if (req.blob_format === undefined || "code" in answer) return answer;
    return { ...answer, blob_format: "binary" };
  };
  return {
    store,
    handlers: { "client:put_blob": handler },
    producers: [],
    close: () => store.close(),
  };
}

/** A positive integer, else the default (upstream: a bad value silently falls back). */
function positive(v: number | undefined, fallback: number): number {
  return v !== undefined && Number.isSafeInteger(v) && v > 0 ? v : fallback;
}
