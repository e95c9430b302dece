/**
 * The Computer's dispatcher: each routed `client:*` request to its handler, and an answer for
 * every request that has an ack (flat ErrorPayloads, never silence, never a crash):
 * - payload fails the protocol schema → 400 (the Computer trusts no relay; D7);
 * - `computer` is not this Computer's name → not executed, 404 as D9 (D15);
 * - no service handles the event → 500; an event this Computer does not know, with an ack →
 *   404 `unknown_event` at once (its name cut to 64 characters; D27), looked up in a Set only;
 * - a handler throws → 500 (logged with the stack, which never goes on the wire: D23);
 * - an answer that would not fit the Server's `maxHttpBufferSize` → 500 instead of an oversized
 *   ack that would make the Server drop this Computer's socket (D16).
 * `notify:tool_call_cancel` goes to every service's `cancel`. Chunk requests wait in the
 * `ChunkScheduler` (chunk-scheduler.ts) until their answer may leave.
 */
import type { Logger } from "pino";
import type { Socket } from "socket.io-client";
import {
  badRequest,
  CLIENT_EVENTS,
  CLIENT_REQUEST_SCHEMAS,
  computerNotFound,
  encodedAckBytes,
  Events,
  internalError,
  isErrorPayload,
  plainGetBlob,
  ToolCallCancelSchema,
  type ClientEvent,
  type GetBlobReq,
  unknownEvent,
} from "@a2c-smcp/protocol";
import type { ClientHandler, ComputerService, RequestContext } from "./contracts.ts";
import type { ComputerMetrics } from "./metrics.ts";
import { type Ack, ChunkScheduler, type ChunkSchedulerTuning } from "./chunk-scheduler.ts";
import type { AnswerTransport } from "./transport/index.ts";

export interface DispatcherOptions {
  /** This Computer's name: requests for another `computer` are not executed. */
  name: string;
  /** The Server's `maxHttpBufferSize`: no answer may be larger (D16). */
  maxHttpBufferSize: number;
  handlers: ReadonlyMap<ClientEvent, ClientHandler<ClientEvent>>;
  /** Told about `notify:tool_call_cancel`. */
  services: readonly ComputerService[];
  transport: AnswerTransport;
  /** How chunk requests are queued and answered. */
  chunks?: ChunkSchedulerTuning;
  metrics: ComputerMetrics;
  log: Logger;
}

export interface Dispatcher {
  /** Aborts the signals of the requests being answered and refuses the queued chunk requests. */
  abortAll(): void;
}

/**
 * One request's context. The signal and the logger are made on first use: a chunk served from a
 * held descriptor needs neither, and both cost measurable CPU at thousands of chunks a second.
 */
class LazyContext implements RequestContext {
  #controller: AbortController | undefined;
  #child: Logger | undefined;

  constructor(
    private readonly event: ClientEvent,
    private readonly reqId: string,
    private readonly parent: Logger,
    private readonly closing: () => boolean,
  ) {}

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.closing()) this.#controller.abort();
    return this.#controller.signal;
  }

  get log(): Logger {
    return (this.#child ??= this.parent.child({ event: this.event, req_id: this.reqId }));
  }

  abort(): void {
    this.#controller?.abort();
  }
}

export function dispatch(socket: Socket, options: DispatcherOptions): Dispatcher {
  const dispatcher = new RequestDispatcher(options);
  dispatcher.listen(socket);
  return dispatcher;
}

/** The dispatcher's state and its per-request steps; `listen` wires them to the socket. */
class RequestDispatcher implements Dispatcher {
  #closing = false;
  readonly #isClosing = (): boolean => this.#closing;
  /** The requests being answered. */
  readonly #inflight = new Set<LazyContext>();
  readonly #chunks: ChunkScheduler;

  constructor(private readonly options: DispatcherOptions) {
    const blobHandler = options.handlers.get(Events.GetBlob);
    this.#chunks = new ChunkScheduler({
      ...options.chunks,
      maxHttpBufferSize: options.maxHttpBufferSize,
      read: (req) => {
        const ctx = new LazyContext(Events.GetBlob, req.req_id, options.log, this.#isClosing);
        return this.#run(Events.GetBlob, req, blobHandler!, ctx);
      },
      transport: options.transport,
      answer: (ack, result) => this.#answer(Events.GetBlob, ack, result),
      metrics: options.metrics,
    });
  }

  /** Every `client:*` event to `#handle`, unknown events answered, cancels to the services. */
  listen(socket: Socket): void {
    const { log, metrics } = this.options;
    for (const event of CLIENT_EVENTS) {
      // The ack is the LAST argument (socket.io appends it): a peer sending extra arguments must
      // still get its answer, not silence.
      socket.on(event, (payload: unknown, ...rest: unknown[]) => {
        const ack = rest.at(-1);
        if (typeof ack !== "function") {
          log.warn({ event }, "client:* request without an ack; ignored");
          return;
        }
        this.#handle(event, payload, ack as Ack).catch((err: unknown) => {
          log.error({ err, event }, "answer failed");
        });
      });
    }

    const known = new Set<string>([...CLIENT_EVENTS, Events.ToolCallCancelNotify]);
    socket.onAny((event: string, ...args: unknown[]) => {
      if (known.has(event)) return;
      const ack = args.at(-1);
      if (typeof ack !== "function") return;
      metrics.unknownEvents.inc();
      (ack as Ack)(unknownEvent(event));
    });

    socket.on(Events.ToolCallCancelNotify, (payload: unknown) => this.#cancel(payload));
  }

  abortAll(): void {
    this.#closing = true;
    this.#chunks.close();
    for (const ctx of this.#inflight) ctx.abort();
  }

  async #handle(event: ClientEvent, payload: unknown, ack: Ack): Promise<void> {
    let req: { computer: string; req_id: string };
    if (event === Events.GetBlob && plainGetBlob(payload)) req = payload;
    else {
      const parsed = CLIENT_REQUEST_SCHEMAS[event].safeParse(payload);
      if (!parsed.success) return this.#answer(event, ack, badRequest());
      req = parsed.data as { computer: string; req_id: string };
    }
    const { name, handlers, log, maxHttpBufferSize } = this.options;
    if (req.computer !== name) return this.#answer(event, ack, computerNotFound(req.computer));
    const handler = handlers.get(event);
    if (!handler) {
      return this.#answer(event, ack, internalError(`${event} is not served by this Computer`));
    }
    if (event === Events.GetBlob) return this.#chunks.submit(req as GetBlobReq, ack);
    const ctx = new LazyContext(event, req.req_id, log, this.#isClosing);
    const result = await this.#run(event, req, handler, ctx);
    if (encodedAckBytes(result) > maxHttpBufferSize) {
      ctx.log.error("answer larger than the Server's maxHttpBufferSize; not sent");
      return this.#answer(event, ack, internalError("Answer too large for the Server's buffer"));
    }
    this.#answer(event, ack, result);
  }

  async #run(
    event: ClientEvent,
    req: { req_id: string },
    handler: ClientHandler<ClientEvent>,
    ctx: LazyContext,
  ): Promise<unknown> {
    this.#inflight.add(ctx);
    try {
      return await handler(req as never, ctx);
    } catch (err) {
      this.options.log.error({ err, event }, "handler failed");
      return internalError();
    } finally {
      this.#inflight.delete(ctx);
    }
  }

  #answer(event: ClientEvent, ack: Ack, result: unknown): void {
    const outcome = isErrorPayload(result) ? String(result.code) : "ok";
    this.options.metrics.requests.inc({ event, outcome });
    ack(result);
  }

  #cancel(payload: unknown): void {
    const parsed = ToolCallCancelSchema.safeParse(payload);
    if (!parsed.success) return this.options.log.warn("malformed notify:tool_call_cancel ignored");
    for (const service of this.options.services) {
      try {
        service.cancel?.(parsed.data.req_id);
      } catch (err) {
        this.options.log.error({ err }, "cancel failed");
      }
    }
  }
}
