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
import { ChunkScheduler, type ChunkSchedulerTuning } from "./chunk-scheduler.ts";
import type { Ack, AnswerTransport } from "./transport/index.ts";

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
 * A class rather than closures: tsx (esbuild's keepNames) names each named closure with a
 * defineProperty call, which would be paid per request.
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
  const { name, handlers, transport, metrics, log } = options;
  let closing = false;
  const isClosing = (): boolean => closing;
  /** The requests being answered. */
  const inflight = new Set<LazyContext>();

  const run = async (
    event: ClientEvent,
    req: { req_id: string },
    handler: ClientHandler<ClientEvent>,
    ctx: LazyContext,
  ): Promise<unknown> => {
    inflight.add(ctx);
    try {
      return await handler(req as never, ctx);
    } catch (err) {
      log.error({ err, event }, "handler failed");
      return internalError();
    } finally {
      inflight.delete(ctx);
    }
  };

  const answer = (event: ClientEvent, ack: Ack, result: unknown): void => {
    metrics.requests.inc({ event, outcome: isErrorPayload(result) ? String(result.code) : "ok" });
    transport.answer(ack, result);
  };

  const blobHandler = handlers.get(Events.GetBlob);
  const chunks = new ChunkScheduler({
    ...options.chunks,
    maxHttpBufferSize: options.maxHttpBufferSize,
    read: (req) => {
      const ctx = new LazyContext(Events.GetBlob, req.req_id, log, isClosing);
      return run(Events.GetBlob, req, blobHandler!, ctx);
    },
    transport,
    answer: (ack, result) => answer(Events.GetBlob, ack, result),
    metrics,
  });

  const handle = async (event: ClientEvent, payload: unknown, ack: Ack): Promise<void> => {
    let req: { computer: string; req_id: string };
    if (event === Events.GetBlob && plainGetBlob(payload)) req = payload;
    else {
      const parsed = CLIENT_REQUEST_SCHEMAS[event].safeParse(payload);
      if (!parsed.success) return answer(event, ack, badRequest());
      req = parsed.data as { computer: string; req_id: string };
    }
    if (req.computer !== name) return answer(event, ack, computerNotFound(req.computer));
    const handler = handlers.get(event);
    if (!handler)
      return answer(event, ack, internalError(`${event} is not served by this Computer`));
    if (event === Events.GetBlob) return chunks.submit(req as GetBlobReq, ack);
    const ctx = new LazyContext(event, req.req_id, log, isClosing);
    const result = await run(event, req, handler, ctx);
    if (encodedAckBytes(result) > options.maxHttpBufferSize) {
      ctx.log.error("answer larger than the Server's maxHttpBufferSize; not sent");
      return answer(event, ack, internalError("Answer too large for the Server's buffer"));
    }
    answer(event, ack, result);
  };

  for (const event of CLIENT_EVENTS) {
    // The ack is the LAST argument (socket.io appends it): a peer sending extra arguments must
    // still get its answer, not silence.
    socket.on(event, (payload: unknown, ...rest: unknown[]) => {
      const ack = rest.at(-1);
      if (typeof ack !== "function") {
        log.warn({ event }, "client:* request without an ack; ignored");
        return;
      }
      handle(event, payload, ack as Ack).catch((err: unknown) => {
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

  socket.on(Events.ToolCallCancelNotify, (payload: unknown) => {
    const parsed = ToolCallCancelSchema.safeParse(payload);
    if (!parsed.success) return log.warn("malformed notify:tool_call_cancel ignored");
    for (const service of options.services) {
      try {
        service.cancel?.(parsed.data.req_id);
      } catch (err) {
        log.error({ err }, "cancel failed");
      }
    }
  });

  return {
    abortAll() {
      closing = true;
      chunks.close();
      for (const ctx of inflight) ctx.abort();
    },
  };
}
