/**
 * The Server's transport: every departure from stock socket.io / engine.io / ws lives in this
 * folder, behind `ServerTransport`. The rest of the Server (server.ts, the relay, the namespace
 * handlers) reads the same whichever fast paths are on.
 *
 * Fast paths (D51), each kept because the bench's transport section shows what it pays for:
 * - `raw_acks` (raw-text.ts): a Computer's text ack is relayed to the Agent as its JSON text,
 *   never parsed and rebuilt (D13 byte for byte; a third or more of the Server's CPU per MB of
 *   base64); it reads only text ACK messages;
 * - `raw_uploads` (raw-text.ts): an Agent's text `client:put_blob` chunk is forwarded to the
 *   Computer as its JSON text, the payload's long strings slices of it (D113); it reads only
 *   text EVENT messages;
 * - `batch_writes` (session-writes.ts): the parts of one packet in one flush, a flush in one write,
 *   for binary parts of at most 64 KiB, where a chunk's fixed costs decide (D102).
 * Each is probed at start by sending a packet through the installed libraries' real classes; one
 * whose behaviour changed is `unavailable: <reason>` and the Server runs stock for it. With every
 * one off (`transport: "stock"`, `--stock-transport`) the Server runs the libraries as shipped.
 *
 * Outbound accounting (the session meter, session-writes.ts) also reads engine.io and ws internals; it is not a fast
 * path (the outbound bounds need it) and reports a session it cannot read (outbound.ts).
 */
import type { Server as EngineServer } from "engine.io";
import type { Namespace } from "socket.io";
import { Gauge, type Registry } from "prom-client";
import { corkSessionSends, flushPacketsWhole, probeBatchWrites } from "./session-writes.ts";
import {
  carriedByAck,
  probeRawAcks,
  probeRawUploads,
  rawTextParser,
  type Carried,
} from "./raw-text.ts";
import { meterSession, type SessionMeter } from "./session-writes.ts";

export type { CarriedAs, Carried } from "./raw-text.ts";
export type { MeteredSession, SessionMeter } from "./session-writes.ts";

/**
 * The fast paths, each with the probe that checks, on the installed libraries' real classes, the
 * behaviour it relies on (null: it holds; else why not). The same shape as the Computer's list.
 */
const FAST_PATHS = [
  { name: "raw_acks", probe: probeRawAcks },
  { name: "raw_uploads", probe: probeRawUploads },
  { name: "batch_writes", probe: probeBatchWrites },
] as const satisfies readonly { name: string; probe: () => string | null }[];

export type FastPathName = (typeof FAST_PATHS)[number]["name"];
export const FAST_PATH_NAMES: readonly FastPathName[] = FAST_PATHS.map((p) => p.name);

/**
 * `"fast"` (default): every fast path the installed libraries support; `"stock"`: socket.io,
 * engine.io and ws as shipped; `{ off }`: the default without the named ones (the bench's
 * transport section measures each one's gain that way).
 */
export type TransportOption = "fast" | "stock" | { readonly off: readonly FastPathName[] };

export type FastPathState = "on" | "off" | `unavailable: ${string}`;

/** What each fast path is doing on this Server (log line, /healthz `fast_paths`, metrics). */
export type FastPathReport = Readonly<Record<FastPathName, FastPathState>>;

/** Whether `option` asks for `name`. */
export function wants(option: TransportOption, name: FastPathName): boolean {
  if (option === "fast") return true;
  if (option === "stock") return false;
  return !option.off.includes(name);
}

/** Asked-for fast paths probed on the installed libraries; the others `off`. */
export function decideFastPaths(
  option: TransportOption,
  probe: (name: FastPathName) => string | null = (name) =>
    FAST_PATHS.find((p) => p.name === name)!.probe(),
): Record<FastPathName, FastPathState> {
  const report = {} as Record<FastPathName, FastPathState>;
  for (const name of FAST_PATH_NAMES) {
    if (!wants(option, name)) {
      report[name] = "off";
      continue;
    }
    let missing: string | null;
    try {
      missing = probe(name);
    } catch (err) {
      missing = `probe failed: ${(err as Error).message}`;
    }
    report[name] = missing === null ? "on" : `unavailable: ${missing}`;
  }
  return report;
}

export interface ServerTransport {
  /** Each fast path's state (final once `attach` has run). */
  readonly report: FastPathReport;
  /** Merged into socket.io's Server options (`parser` for raw acks and uploads). */
  readonly ioOptions: { parser?: ReturnType<typeof rawTextParser> };
  /** Applies the per-connection fast paths to every session of `engine` and client of `nsp`. */
  attach(engine: EngineServer, nsp: Namespace): void;
  /** What one answer carried, from the ack arguments the relay received for it. */
  readonly carried: (ackArgs: readonly unknown[]) => Carried;
  /** Outbound accounting of one engine.io session, or null for a session it cannot read. */
  readonly meter: (session: unknown, onDelta: (delta: number) => void) => SessionMeter | null;
}

/** An engine.io session as the transport follows it. */
interface Session {
  on(event: "upgrade", listener: (transport: unknown) => void): unknown;
  readonly transport: unknown;
}

export function createServerTransport(
  option: TransportOption = "fast",
  probe?: (name: FastPathName) => string | null,
): ServerTransport {
  const report = decideFastPaths(option, probe);
  return {
    report,
    ioOptions:
      report.raw_acks === "on" || report.raw_uploads === "on"
        ? {
            parser: rawTextParser({
              acks: report.raw_acks === "on",
              uploads: report.raw_uploads === "on",
            }),
          }
        : {},
    attach(engine, nsp) {
      if (report.batch_writes !== "on") return;
      engine.on("connection", (session: Session) => corkSessionSends(session));
      nsp.on("connection", (socket) => flushPacketsWhole(socket.client));
    },
    carried: carriedByAck,
    meter: meterSession,
  };
}

/** `a2c_transport_fast_path{name,state}`: 1 for a fast path that is on, else 0. */
export function registerFastPathGauge(registry: Registry, report: FastPathReport): void {
  new Gauge({
    name: "a2c_transport_fast_path",
    help: "Transport fast paths of this Server (server/transport/): 1 = on; 0 = off by option or unavailable in the installed libraries (state label; the reason is in /healthz)",
    labelNames: ["name", "state"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const name of FAST_PATH_NAMES) {
        const state = report[name];
        const label = state.startsWith("unavailable") ? "unavailable" : state;
        this.set({ name, state: label }, state === "on" ? 1 : 0);
      }
    },
  });
}
