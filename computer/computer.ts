/**
 * The Computer in-process: `startComputer(options)` connects to the Server's `/smcp` namespace,
 * joins its office as a `computer`, rejoins after every reconnect, and dispatches each routed
 * `client:*` request to the service that handles it (blob engine, SKILL service, tool service).
 *
 * Dispatch rules (all answers are flat ErrorPayloads, never silence, never a crash):
 * - payload fails the protocol schema → 400 (the Computer trusts no relay);
 * - `computer` is not this Computer's name → not executed, 404 as D9 (computer.md §3: "MUST NOT
 *   execute"; DECISIONS D15);
 * - no service handles the event → 500; an event this Computer does not know, with an ack →
 *   404 `unknown_event` at once (its name cut to 64 characters), looked up in a Set only;
 * - a handler throws → 500 (logged with the stack, which never goes on the wire: D23);
 * - an answer that would not fit the Server's `maxHttpBufferSize` → 500 instead of an oversized
 *   ack that would make the Server drop this Computer's socket (D16).
 */
import { homedir } from "node:os";
import { join as joinPath } from "node:path";
import type { Logger } from "pino";
import { io, type Socket } from "socket.io-client";
import {
  badRequest,
  CLIENT_EVENTS,
  CLIENT_REQUEST_SCHEMAS,
  computerNotFound,
  DEFAULT_ENGINE_PATH,
  DEFAULT_MAX_HTTP_BUFFER_SIZE,
  encodedAckBytes,
  Events,
  internalError,
  isErrorPayload,
  NAMESPACE,
  PROTOCOL_VERSION,
  ToolCallCancelSchema,
  VERSION_QUERY_PARAM,
  type ClientEvent,
  type ClientToServerEvents,
  type ServerToClientEvents,
  type Transport,
  unknownEvent,
} from "@a2c-smcp/protocol";
import { DrainReleases } from "./blob/buffers.ts";
import { ScratchBuffers, maskScratchInPlace } from "./mask-in-place.ts";
import { batchWrites, onEveryTransport } from "./write-batching.ts";
import { BlobEngine, DEFAULT_MAX_IN_FLIGHT, type BlobEngineOptions } from "./blob/engine.ts";
import { HandleCodec, loadOrCreateHandleKey } from "./blob/handle.ts";
import { DEFAULT_DERIVED_MAX_BYTES, DerivedStore } from "./blob/derived.ts";
import { HashCache } from "./blob/hash-cache.ts";
import { ComputerConnectError, describeConnectError } from "./connect-error.ts";
import {
  DEFAULT_INLINE_BUDGET,
  DEFAULT_MAX_SIZE,
  type ClientHandler,
  type ComputerConfig,
  type ComputerService,
  type HandleMinter,
  type RequestContext,
} from "./contracts.ts";
import { createComputerLogger } from "./log.ts";
import { createComputerMetrics, type ComputerMetrics } from "./metrics.ts";
import { createSkillService, type SkillService } from "./skills/index.ts";
import { createToolService } from "./tools/service.ts";
import { createHashPool, defaultWorkerCount } from "./workers/pool.ts";

export { ComputerConnectError } from "./connect-error.ts";

/** What a service factory gets: everything a producer needs to mint and log. */
export interface ServiceContext {
  readonly config: ComputerConfig;
  readonly minter: HandleMinter;
  readonly log: Logger;
  readonly metrics: ComputerMetrics;
  /** The engine's hash cache, so producers hash a file once for mint and pull alike. */
  readonly hashCache?: HashCache;
  /** Derived resources (SKILL.md bodies), produced in the Computer's pool. */
  readonly derived?: DerivedStore;
}

export type ServiceFactory = (ctx: ServiceContext) => ComputerService | Promise<ComputerService>;

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
  /** MCP servers config file. Used by the default tool service. */
  mcpConfig?: string;
  maxHttpBufferSize?: number;
  inlineBudget?: number;
  maxSize?: number;
  /** Serve skill files with more than one hard link (skills/sandbox.ts). Default false. */
  allowHardLinks?: boolean;
  /** Hashing threads (piscina). 0 = hash inline on the main thread. */
  workers?: number;
  /** Nice offset of the hashing threads (0–19), default DEFAULT_HASH_NICE (blob/hash-cache.ts). */
  hashNice?: number;
  /**
   * Services to run. Each entry is a service or a factory called with the engine as minter.
   * When absent, the defaults are built from `skills` / `mcpConfig` (see `defaultServices`).
   */
  services?: Array<ComputerService | ServiceFactory>;
  /** Blob engine tuning (chunk default, concurrency limits, descriptors kept open). */
  blob?: Pick<
    BlobEngineOptions,
    "defaultChunkBytes" | "maxInFlight" | "maxQueue" | "maxQueueWaitMs" | "fdCacheEntries"
  >;
  /** Client transports, polling first (digest §1.2 MUST). */
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
  /** Pooled binary chunks returned / dropped after their ack (instrumentation). */
  readonly binaryReleases: DrainReleases;
  readonly minter: HandleMinter;
  readonly hashCache: HashCache;
  readonly metrics: ComputerMetrics;
  readonly services: readonly ComputerService[];
  readonly socket: Socket<ServerToClientEvents, ClientToServerEvents>;
  /** True while joined to the office. */
  readonly joined: boolean;
  close(): Promise<void>;
}

/**
 * Services built when `options.services` is absent: the SKILL service when `skills` is set, the
 * tool service when `mcpConfig` is set (it stages MCP `skill://` bundles into the skill home and
 * asks the SKILL registry to rescan).
 */
export function defaultServices(options: StartComputerOptions): ServiceFactory[] {
  const factories: ServiceFactory[] = [];
  let skills: SkillService | undefined;
  if (options.skills !== undefined) {
    const home = options.skills;
    factories.push(async (ctx) => {
      skills = await createSkillService({
        config: ctx.config,
        home,
        minter: ctx.minter,
        log: ctx.log,
        ...(ctx.hashCache ? { fileHasher: ctx.hashCache } : {}),
        ...(ctx.derived ? { derived: ctx.derived } : {}),
      });
      return skills;
    });
  }
  if (options.mcpConfig !== undefined) {
    const mcpConfigPath = options.mcpConfig;
    factories.push((ctx) =>
      createToolService({
        config: ctx.config,
        mcpConfigPath,
        minter: ctx.minter,
        log: ctx.log,
        ...(options.skills !== undefined ? { skillsHome: options.skills } : {}),
        onSkillsChanged: () => {
          skills?.refresh().catch((err: unknown) => ctx.log.error({ err }, "skill rescan failed"));
        },
      }),
    );
  }
  return factories;
}

const JOIN_TIMEOUT_MS = 10_000;
const REJOIN_DELAY_MS = 1_000;

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
  const codec = new HandleCodec(await loadOrCreateHandleKey(config.stateDir, log));
  const pool = createHashPool(options.workers ?? defaultWorkerCount());
  const hashCache = new HashCache({
    pool,
    metrics,
    ...(options.hashNice !== undefined ? { hashNice: options.hashNice } : {}),
  });
  const derived = await DerivedStore.open({
    dir: joinPath(config.stateDir, "derived"),
    hashes: hashCache,
    pool,
    maxBytes: Math.max(DEFAULT_DERIVED_MAX_BYTES, config.maxSize),
    metrics,
    log,
  });
  const s: Socket<ServerToClientEvents, ClientToServerEvents> = io(
    `${options.server.replace(/\/+$/, "")}${NAMESPACE}`,
    {
      path: options.path ?? DEFAULT_ENGINE_PATH,
      query: { [VERSION_QUERY_PARAM]: PROTOCOL_VERSION },
      auth: options.token !== undefined ? { token: options.token } : {},
      transports: options.transports ?? ["polling", "websocket"],
      reconnectionDelayMax: 5_000,
      autoConnect: false,
    },
  );
  // One flush and one write per answer, on every engine the Manager opens (write-batching.ts).
  batchWrites(s.io);
  // Lent chunk buffers are masked in place by ws instead of copied (mask-in-place.ts).
  const scratch = new ScratchBuffers();
  onEveryTransport(s.io, (transport) => maskScratchInPlace(transport, scratch));
  const engine = new BlobEngine({
    // Binary chunks are read into pooled buffers, returned after the transport drained (below).
    lendBinary: true,
    ...options.blob,
    codec,
    hashCache,
    maxHttpBufferSize: config.maxHttpBufferSize,
    transport: () => (s.io.engine?.transport?.name === "websocket" ? "websocket" : "polling"),
    metrics,
    log,
  });

  // Services: the blob engine's own, then the configured ones (their producers register here).
  const blobService: ComputerService = {
    handlers: { [Events.GetBlob]: (req, ctx) => engine.getBlob(req, ctx) },
    producers: [],
    close: () => engine.close(),
  };
  const services: ComputerService[] = [blobService];
  // Bounded like the pool: more pending buffers than reads in flight are dropped, not kept.
  const binaryReleases = new DrainReleases(
    (buf) => engine.giveBack(buf),
    options.blob?.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
  );
  const handlers = new Map<ClientEvent, ClientHandler<ClientEvent>>();
  const closeAll = async (): Promise<void> => {
    await Promise.allSettled(services.map((s) => s.close()));
    await pool?.close();
  };
  try {
    const ctx: ServiceContext = { config, minter: engine, log, metrics, hashCache, derived };
    for (const entry of options.services ?? defaultServices(options)) {
      services.push(typeof entry === "function" ? await entry(ctx) : entry);
    }
    for (const service of services) {
      for (const producer of service.producers) engine.register(producer);
      for (const [event, handler] of Object.entries(service.handlers)) {
        if (handlers.has(event as ClientEvent)) throw new Error(`two services handle ${event}`);
        handlers.set(event as ClientEvent, handler as ClientHandler<ClientEvent>);
      }
    }
  } catch (err) {
    await closeAll();
    throw err;
  }

  let joined = false;
  let closing = false;
  let everJoined = false;
  let rejoinTimer: NodeJS.Timeout | undefined;
  /** Aborts of the requests being answered (called on close). */
  const inflight = new Set<() => void>();
  let settleStart: { resolve: () => void; reject: (err: Error) => void } | undefined;
  const started = new Promise<void>((resolve, reject) => (settleStart = { resolve, reject }));

  const fatal = (err: Error): void => {
    log.error({ err: err.message }, "giving up");
    s.disconnect();
    if (settleStart) settleStart.reject(err);
    else options.onFatal?.(err);
    settleStart = undefined;
  };

  const notify = (event: "server:update_skills" | "server:update_tool_list"): void => {
    // computer.md §2.2: only once joined, and only into our own office (the Server scopes it).
    if (joined) s.emit(event, { computer: name });
  };

  const joinTimeoutMs = options.joinTimeoutMs ?? JOIN_TIMEOUT_MS;
  const join = (): void => {
    s.timeout(joinTimeoutMs).emit(
      Events.JoinOffice,
      { role: "computer", name, office_id: options.office },
      (err: Error | null, ok?: boolean, reason?: string | null) => {
        if (closing) return;
        if (err) {
          // No answer is not a refusal: a starved or restarting Server may answer late. Ask
          // again (joining the office one is in under the same name is a no-op on the Server);
          // `startTimeoutMs` bounds how long a start waits in all.
          log.warn({ timeoutMs: joinTimeoutMs }, "join not answered; retrying");
          rejoinTimer = setTimeout(() => s.connected && join(), REJOIN_DELAY_MS);
          return;
        }
        if (ok !== true) {
          const why = reason ?? "refused";
          if (!everJoined)
            return fatal(new ComputerConnectError("join_refused", `join refused: ${why}`));
          // After a reconnect the Server may still hold our old session for a moment: retry.
          log.warn({ reason: why }, "rejoin refused; retrying");
          rejoinTimer = setTimeout(() => s.connected && join(), REJOIN_DELAY_MS);
          return;
        }
        joined = true;
        everJoined = true;
        log.info({ office: options.office }, "joined office");
        for (const service of services) service.attach?.(notify);
        settleStart?.resolve();
        settleStart = undefined;
      },
    );
  };

  s.on("connect", () => {
    log.info({ transport: s.io.engine?.transport?.name }, "connected");
    join();
  });
  s.on("disconnect", (reason) => {
    if (joined) for (const service of services) service.detach?.();
    joined = false;
    if (closing) return;
    log.warn({ reason }, "disconnected");
    // A Server-side disconnect stops socket.io's auto-reconnect; come back anyway.
    if (reason === "io server disconnect")
      rejoinTimer = setTimeout(() => s.connect(), REJOIN_DELAY_MS);
  });
  s.on("connect_error", (err) => {
    const described = describeConnectError(err);
    if (described) return fatal(described);
    log.warn({ err: err.message }, "connect failed; retrying");
  });

  const answer = async (event: ClientEvent, payload: unknown): Promise<unknown> => {
    const parsed = CLIENT_REQUEST_SCHEMAS[event].safeParse(payload);
    if (!parsed.success) return badRequest();
    const req = parsed.data as { computer: string; req_id: string };
    if (req.computer !== name) return computerNotFound(req.computer);
    const handler = handlers.get(event);
    if (!handler) return internalError(`${event} is not served by this Computer`);
    // The signal and the per-request logger are made on first use: a chunk served from a cached
    // descriptor needs neither, and both cost measurable CPU at thousands of chunks per second.
    let controller: AbortController | undefined;
    let child: Logger | undefined;
    const abort = (): void => controller?.abort();
    inflight.add(abort);
    try {
      const ctx: RequestContext = {
        get signal() {
          controller ??= new AbortController();
          if (closing) controller.abort();
          return controller.signal;
        },
        get log() {
          return (child ??= log.child({ event, req_id: req.req_id }));
        },
      };
      const result = await handler(req as never, ctx);
      if (event !== Events.GetBlob && encodedAckBytes(result) > config.maxHttpBufferSize) {
        ctx.log.error("answer larger than the Server's maxHttpBufferSize; not sent");
        return internalError("Answer too large for the Server's buffer");
      }
      return result;
    } finally {
      inflight.delete(abort);
    }
  };

  for (const event of CLIENT_EVENTS) {
    // The ack is the LAST argument (socket.io appends it): a peer sending extra arguments must
    // still get its answer, not silence.
    (s as Socket).on(event, (payload: unknown, ...rest: unknown[]) => {
      const ack = rest.at(-1);
      if (typeof ack !== "function") {
        log.warn({ event }, "client:* request without an ack; ignored");
        return;
      }
      answer(event, payload)
        .catch((err: unknown) => {
          log.error({ err, event }, "handler failed");
          return internalError();
        })
        .then(
          (result) => {
            const outcome = isErrorPayload(result) ? String(result.code) : "ok";
            metrics.requests.inc({ event, outcome });
            // A pooled binary chunk is ours: the transport may mask it in place (mask-in-place.ts).
            const blob = (result as { blob?: unknown }).blob;
            const lent = engine.lentBuffer(blob);
            if (lent) scratch.mark(blob as Buffer);
            (ack as (a: unknown) => void)(result);
            // The ack has been written into the current engine (socket.io encodes and writes
            // synchronously); its pooled binary chunk goes back once that engine has drained.
            if (lent) binaryReleases.hold(s.io.engine, lent);
          },
          () => undefined,
        );
    });
  }
  const known = new Set<string>([...CLIENT_EVENTS, Events.ToolCallCancelNotify]);
  s.onAny((event: string, ...args: unknown[]) => {
    if (known.has(event)) return;
    const ack = args.at(-1);
    if (typeof ack !== "function") return;
    metrics.unknownEvents.inc();
    (ack as (a: unknown) => void)(unknownEvent(event));
  });
  s.on(Events.ToolCallCancelNotify, (payload: unknown) => {
    const parsed = ToolCallCancelSchema.safeParse(payload);
    if (!parsed.success) return log.warn("malformed notify:tool_call_cancel ignored");
    for (const service of services) {
      try {
        service.cancel?.(parsed.data.req_id);
      } catch (err) {
        log.error({ err }, "cancel failed");
      }
    }
  });

  const close = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    clearTimeout(rejoinTimer);
    if (joined) for (const service of services) service.detach?.();
    if (joined && s.connected) {
      await s
        .timeout(1_000)
        .emitWithAck(Events.LeaveOffice, { office_id: options.office })
        .catch(() => undefined);
    }
    joined = false;
    s.disconnect();
    for (const abort of inflight) abort();
    await closeAll();
  };

  s.connect();
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  let startTimer: NodeJS.Timeout | undefined;
  if (startTimeoutMs > 0) {
    startTimer = setTimeout(
      () => fatal(new ComputerConnectError("timeout", `not joined within ${startTimeoutMs} ms`)),
      startTimeoutMs,
    );
  }
  try {
    await started;
  } catch (err) {
    await close();
    throw err;
  } finally {
    clearTimeout(startTimer);
  }

  return {
    name,
    config,
    engine,
    binaryReleases,
    minter: engine,
    hashCache,
    metrics,
    services,
    socket: s,
    get joined() {
      return joined;
    },
    close,
  };
}
