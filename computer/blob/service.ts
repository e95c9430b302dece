/**
 * The blob service: what answers `client:get_blob` and what producers share with it. The handle
 * key in the state directory (D14), the hashing pool (workers/pool.ts), the hash cache keyed by
 * content signature (D18), the derived store of SKILL.md bodies (D33) and the engine that serves
 * chunks from them.
 */
import { join } from "node:path";
import type { Logger } from "pino";
import { Events, type Transport } from "@a2c-smcp/protocol";
import type { ComputerConfig, ComputerService } from "../contracts.ts";
import type { ComputerMetrics } from "../metrics.ts";
import { createHashPool, defaultWorkerCount } from "../workers/pool.ts";
import { DEFAULT_DERIVED_MAX_BYTES, DerivedStore } from "./derived.ts";
import { BlobEngine, type BlobEngineOptions } from "./engine.ts";
import { HandleCodec, loadOrCreateHandleKey } from "./handle.ts";
import { HashCache } from "./hash-cache.ts";

/** Engine settings a Computer may tune (part of `StartComputerOptions.blob`). */
export type BlobEngineTuning = Pick<
  BlobEngineOptions,
  "defaultChunkBytes" | "fdCacheEntries" | "compression"
>;

export interface BlobServiceOptions {
  config: ComputerConfig;
  /** Hashing threads; 0 = inline on the main thread. Default `defaultWorkerCount()`. */
  workers?: number;
  /** Nice offset of the hashing threads. */
  hashNice?: number;
  tuning?: BlobEngineTuning;
  /** The transport in use (chunk sizing: binary over polling travels base64'd). */
  transport: () => Transport;
  metrics: ComputerMetrics;
  log: Logger;
}

export interface BlobService {
  /** Serves `client:get_blob`, as a service among the others. */
  readonly service: ComputerService;
  readonly engine: BlobEngine;
  readonly hashCache: HashCache;
  readonly derived: DerivedStore;
  /** Stops the hashing threads: after every service has closed (they may hash until then). */
  stopWorkers(): Promise<void>;
}

export async function startBlobService(o: BlobServiceOptions): Promise<BlobService> {
  const { config, metrics, log } = o;
  const codec = new HandleCodec(await loadOrCreateHandleKey(config.stateDir, log));
  const pool = createHashPool(o.workers ?? defaultWorkerCount(), {
    metrics: {
      queued: metrics.hashQueued,
      waitSeconds: metrics.hashWaitSeconds,
      refusals: metrics.hashRefusals,
    },
  });
  const hashCache = new HashCache({
    pool,
    metrics,
    ...(o.hashNice !== undefined ? { hashNice: o.hashNice } : {}),
  });
  let derived: DerivedStore;
  try {
    derived = await DerivedStore.open({
      dir: join(config.stateDir, "derived"),
      hashes: hashCache,
      pool,
      maxBytes: Math.max(DEFAULT_DERIVED_MAX_BYTES, config.maxSize),
      metrics,
      log,
    });
  } catch (err) {
    await pool?.close();
    throw err;
  }
  const engine = new BlobEngine({
    ...(o.tuning?.defaultChunkBytes !== undefined
      ? { defaultChunkBytes: o.tuning.defaultChunkBytes }
      : {}),
    ...(o.tuning?.fdCacheEntries !== undefined ? { fdCacheEntries: o.tuning.fdCacheEntries } : {}),
    ...(o.tuning?.compression !== undefined ? { compression: o.tuning.compression } : {}),
    codec,
    hashCache,
    maxHttpBufferSize: config.maxHttpBufferSize,
    transport: o.transport,
    metrics,
    log,
  });
  return {
    engine,
    hashCache,
    derived,
    service: {
      handlers: { [Events.GetBlob]: engine.getBlob.bind(engine) },
      producers: [],
      close: () => engine.close(),
    },
    stopWorkers: async () => pool?.close(),
  };
}
