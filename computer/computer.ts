/**
 * The Computer in-process: `startComputer(options)` composes its parts and resolves once it has
 * joined its office.
 *
 * - connection.ts: the socket, joining and rejoining the office, giving up;
 * - transport/: how answers leave (the unsent bytes) and whether its
 *   departure from the libraries' stock behaviour is on (probed at start);
 * - blob/service.ts: the engine behind `client:get_blob` with its handle key, hashing pool, hash
 *   cache and derived store;
 * - services.ts: the SKILL and tool services (or the caller's), their producers and handlers;
 * - dispatch.ts: each `client:*` request to its handler, and an answer for every one; chunk
 *   answers scheduled by the socket's unsent bytes.
 */
import { homedir } from "node:os";
import { join as joinPath } from "node:path";
import type { Logger } from "pino";
import { DEFAULT_MAX_HTTP_BUFFER_SIZE, type Transport } from "@a2c-smcp/protocol";
import type { BlobEngine } from "./blob/engine.ts";
import type { HashCache } from "./blob/hash-cache.ts";
import { startBlobService, type BlobEngineTuning, type BlobService } from "./blob/service.ts";
import { connection, type ComputerSocket, type Connection } from "./connection.ts";
import {
  DEFAULT_INLINE_BUDGET,
  DEFAULT_MAX_SIZE,
  type ComputerConfig,
  type ComputerService,
  type HandleMinter,
} from "./contracts.ts";
import type { ChunkSchedulerTuning } from "./chunk-scheduler.ts";
import { dispatch, type Dispatcher } from "./dispatch.ts";
import { createComputerLogger } from "./log.ts";
import { createUploadService, type UploadTuning } from "./upload/service.ts";
import { createComputerMetrics, type ComputerMetrics } from "./metrics.ts";
import {
  closeServices,
  defaultServices,
  startServices,
  type ServiceContext,
  type ServiceFactory,
} from "./services.ts";
import {
  createAnswerTransport,
  type AnswerTransport,
  type FastPathReport,
  type TransportMode,
} from "./transport/index.ts";

export { ComputerConnectError } from "./connect-error.ts";
export { defaultServices, type ServiceContext, type ServiceFactory } from "./services.ts";

/** Chunk serving settings (`StartComputerOptions.blob`). */
export type BlobTuning = BlobEngineTuning &
  Pick<ChunkSchedulerTuning, "maxInFlight" | "maxQueue" | "maxUnsentBytes" | "unsentTargetMs">;

export interface StartComputerOptions {
  /** Server base URL, e.g. `http://127.0.0.1:7000` (the `/smcp` namespace is appended). */
  server: string;
  office: string;
  name: string;
  token?: string;
  /** Engine.IO path (D2). Default `/socket.io/`. */
  path?: string;
  /** Default `~/.a2c/computers/<name>`. Holds the handle key (D14) and the tool spool (D24). */
  stateDir?: string;
  /** Skill home (D20). Used by the default SKILL service. */
  skills?: string;
  /** Entries of one skill package read per change scan (skills/watcher.ts, D58). */
  skillWatchEntries?: number;
  /** MCP servers config file. Used by the default tool service. */
  mcpConfig?: string;
  maxHttpBufferSize?: number;
  inlineBudget?: number;
  maxSize?: number;
  /** Serve skill files with more than one hard link (skills/sandbox.ts). Default false. */
  allowHardLinks?: boolean;
  /**
   * Absolute directory `client:put_blob` uploads land in (upload/service.ts). Unset: every
   * upload is refused `4019 forbidden`. Only the operator sets it (flag or environment).
   */
  landingRoot?: string;
  /** The upload store's bounds: idle timeout, sessions at once, largest upload. */
  upload?: UploadTuning;
  /** Hashing threads (piscina). 0 = hash inline on the main thread. */
  workers?: number;
  /** Nice offset of the hashing threads (0–19), default DEFAULT_HASH_NICE (blob/hash-cache.ts). */
  hashNice?: number;
  /**
   * Services to run. Each entry is a service or a factory called with the engine as minter.
   * When absent, the defaults are built from `skills` / `mcpConfig` (see `defaultServices`).
   */
  services?: Array<ComputerService | ServiceFactory>;
  /**
   * Chunk serving: the default chunk, descriptors kept open, reads at once, queued requests, the
   * unsent bytes the socket may hold before no further chunk is read (D48), and the
   * content-codings chunk answers may get (`compression`, D63, D64).
   */
  blob?: BlobTuning;
  /**
   * The Server's relay timeout of `client:get_*` (D10), default 30 s: a chunk request queued so
   * long that its answer would arrive later is answered `busy` (D50).
   */
  relayTimeoutMs?: number;
  /**
   * `"fast"` (default): the transport fast paths the installed libraries support; `"stock"`:
   * socket.io-client, engine.io-client and ws exactly as shipped; `{ off: [name] }`: the default
   * without the named fast paths (transport/index.ts).
   */
  transport?: TransportMode;
  /** Client transports, polling first (docs/protocol.md, Connection). */
  transports?: Transport[];
  /** Reject the start promise if not joined within this time (ms). 0 = wait forever. */
  startTimeoutMs?: number;
  /** How long one `server:join_office` waits for its answer before it is sent again (ms). */
  joinTimeoutMs?: number;
  /** Called when the Computer gives up for good (401, 4008, refused join after start). */
  onFatal?: (err: Error) => void;
  logger?: Logger;
}

export interface RunningComputer {
  readonly name: string;
  readonly config: ComputerConfig;
  readonly engine: BlobEngine;
  readonly minter: HandleMinter;
  readonly hashCache: HashCache;
  readonly metrics: ComputerMetrics;
  readonly services: readonly ComputerService[];
  readonly socket: ComputerSocket;
  /** How answers leave. */
  readonly transport: AnswerTransport;
  /** Each fast path `on`, `off` or `unavailable: <reason>`, as of now. */
  readonly fastPaths: FastPathReport;
  /** True while joined to the office. */
  readonly joined: boolean;
  close(): Promise<void>;
}

export async function startComputer(options: StartComputerOptions): Promise<RunningComputer> {
  const name = options.name;
  const log = options.logger ?? createComputerLogger(name);
  const config: ComputerConfig = {
    name,
    stateDir:
      options.stateDir ?? joinPath(homedir(), ".a2c", "computers", encodeURIComponent(name)),
    inlineBudget: options.inlineBudget ?? DEFAULT_INLINE_BUDGET,
    maxSize: options.maxSize ?? DEFAULT_MAX_SIZE,
    maxHttpBufferSize: options.maxHttpBufferSize ?? DEFAULT_MAX_HTTP_BUFFER_SIZE,
    allowHardLinks: options.allowHardLinks ?? false,
  };
  const metrics = createComputerMetrics(name);

  let services: readonly ComputerService[] = [];
  const conn = connection(
    { ...options, log },
    {
      joined: (notify) => services.forEach((s) => s.attach?.(notify)),
      left: () => services.forEach((s) => s.detach?.()),
      fatal: (err) => options.onFatal?.(err),
    },
  );
  const transport = createAnswerTransport(conn.socket.io, {
    mode: options.transport ?? "fast",
    log,
    gauge: metrics.fastPaths,
  });
  const { maxInFlight, maxQueue, maxUnsentBytes, unsentTargetMs, ...engineTuning } =
    options.blob ?? {};
  const blob = await startBlobService({
    config,
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    ...(options.hashNice !== undefined ? { hashNice: options.hashNice } : {}),
    tuning: engineTuning,
    transport: transport.engineTransport,
    metrics,
    log,
  });
  const { engine, hashCache, derived } = blob;
  const upload = createUploadService({
    ...options.upload,
    landingRoot: options.landingRoot,
    log: log.child({ service: "upload" }),
    metrics,
  });
  const ctx: ServiceContext = {
    config,
    minter: engine,
    log,
    metrics,
    hashCache,
    derived,
  };
  const running = await startServices(
    [blob.service, upload],
    options.services ?? defaultServices(options),
    ctx,
    engine,
  ).catch(async (err: unknown) => {
    await upload.close();
    await blob.stopWorkers();
    throw err;
  });
  services = running.services;
  const dispatcher = dispatch(conn.socket, {
    name,
    maxHttpBufferSize: config.maxHttpBufferSize,
    handlers: running.handlers,
    services,
    transport,
    chunks: {
      ...(maxInFlight !== undefined ? { maxInFlight } : {}),
      ...(maxQueue !== undefined ? { maxQueue } : {}),
      ...(maxUnsentBytes !== undefined ? { maxUnsentBytes } : {}),
      ...(unsentTargetMs !== undefined ? { unsentTargetMs } : {}),
      ...(options.relayTimeoutMs !== undefined ? { relayTimeoutMs: options.relayTimeoutMs } : {}),
      ...(engineTuning.defaultChunkBytes !== undefined
        ? { defaultChunkBytes: engineTuning.defaultChunkBytes }
        : {}),
    },
    metrics,
    log,
  });

  const close = once(() => shutdown(conn, dispatcher, services, blob));
  try {
    await conn.start();
  } catch (err) {
    await close();
    throw err;
  }

  return {
    name,
    config,
    engine,
    minter: engine,
    hashCache,
    metrics,
    services,
    socket: conn.socket,
    transport,
    get fastPaths() {
      return { ...transport.report };
    },
    get joined() {
      return conn.joined;
    },
    close,
  };
}

/**
 * Stops in the order that loses nothing: leave the office (Agents stop routing here) and
 * disconnect, abort the requests still being answered, close the services, then the hashing
 * threads they may have been using.
 */
async function shutdown(
  conn: Connection,
  dispatcher: Dispatcher,
  services: readonly ComputerService[],
  blob: BlobService,
): Promise<void> {
  await conn.close();
  dispatcher.abortAll();
  await closeServices(services);
  await blob.stopWorkers();
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}
