/**
 * The Server's transport: every departure from stock socket.io / engine.io / ws behaviour lives
 * in this folder, behind `ServerTransport`. The rest of the Server (server.ts, the relay, the
 * namespace handlers) reads the same whichever fast paths are on.
 *
 * Fast paths (each one `on`, `off` by option, or `unavailable` when the installed libraries lack
 * what it needs, probed at start on their real classes):
 * - `raw_acks` (raw-acks.ts, ack-text.ts): a Computer's text ack is relayed to the Agent as its
 *   JSON text, never parsed and rebuilt (D13 byte for byte);
 * - `ack_bytes` (ack-bytes.ts): a long text ack stays the bytes of its WebSocket message, never a
 *   JS string (needs `raw_acks` and `preframe`);
 * - `preframe` (preframe.ts): a long text packet to a WebSocket session waits as a ready frame;
 * - `batch_writes` (batch-writes.ts): the parts of one packet in one flush, a flush in one write;
 * - `fair_reads` (fair-reads.ts): one WebSocket message per connection per event-loop turn.
 * With every one off the Server runs socket.io, engine.io and ws exactly as shipped.
 *
 * Outbound accounting (session-meter.ts) also reads engine.io and ws internals; it is not a fast
 * path (the outbound bounds need it) and reports a session it cannot read (outbound.ts).
 */
import type { Server as EngineServer } from "engine.io";
import type { Namespace } from "socket.io";
import { Gauge, type Registry } from "prom-client";
import { keepSessionAckBytes, probeAckBytes } from "./ack-bytes.ts";
import { AckText } from "./ack-text.ts";
import { corkSessionSends, flushPacketsWhole, probeBatchWrites } from "./batch-writes.ts";
import { carriedOf, type Carried } from "./carried.ts";
import { fairReadsEngine, probeFairReads, type FairReadsEngine } from "./fair-reads.ts";
import { preframeLongTexts, probePreframe } from "./preframe.ts";
import { probeRawAcks, rawAckBytesParser, rawAckParser } from "./raw-acks.ts";
import { meterSession, type SessionMeter } from "./session-meter.ts";

export type { Carriage, Carried } from "./carried.ts";
export type { MeteredSession, SessionMeter } from "./session-meter.ts";

export const FAST_PATHS = [
  "raw_acks",
  "ack_bytes",
  "preframe",
  "batch_writes",
  "fair_reads",
] as const;
export type FastPath = (typeof FAST_PATHS)[number];

/** Each fast path on (true, the default) or off. */
export interface FastPathSwitches {
  rawAcks?: boolean;
  ackBytes?: boolean;
  preframe?: boolean;
  batchWrites?: boolean;
  fairReads?: boolean;
}

/** `"all"` (default): every fast path the installed libraries support; `"none"`: stock. */
export type FastPathOptions = "all" | "none" | FastPathSwitches;

export type FastPathState = "on" | "off" | `unavailable: ${string}`;

/** What each fast path is doing on this Server (log line, /healthz, metrics). */
export type TransportReport = Readonly<Record<FastPath, FastPathState>>;

const SWITCH: Record<FastPath, keyof FastPathSwitches> = {
  raw_acks: "rawAcks",
  ack_bytes: "ackBytes",
  preframe: "preframe",
  batch_writes: "batchWrites",
  fair_reads: "fairReads",
};

const PROBES: Record<FastPath, () => string | null> = {
  raw_acks: probeRawAcks,
  ack_bytes: probeAckBytes,
  preframe: probePreframe,
  batch_writes: probeBatchWrites,
  fair_reads: probeFairReads,
};

/** Whether `options` asks for `path`. */
export function wants(options: FastPathOptions, path: FastPath): boolean {
  if (options === "all") return true;
  if (options === "none") return false;
  return options[SWITCH[path]] ?? true;
}

/** Asked-for fast paths probed on the installed libraries; the others `off`. */
export function decideFastPaths(
  options: FastPathOptions,
  probe: (path: FastPath) => string | null = (path) => PROBES[path](),
): Record<FastPath, FastPathState> {
  const report = {} as Record<FastPath, FastPathState>;
  for (const path of FAST_PATHS) {
    if (!wants(options, path)) {
      report[path] = "off";
      continue;
    }
    const missing = probe(path);
    report[path] = missing === null ? "on" : `unavailable: ${missing}`;
  }
  // Acks kept as bytes are written only by the raw-ack encoder, through preframe's writer.
  if (report.ack_bytes === "on" && (report.raw_acks !== "on" || report.preframe !== "on")) {
    report.ack_bytes = "unavailable: needs raw_acks and preframe on";
  }
  return report;
}

export interface ServerTransport {
  /** Each fast path's state (final once `attach` has run). */
  readonly report: TransportReport;
  /** Merged into engine.io's Server options (`wsEngine` for fair reads). */
  readonly engineOptions: { wsEngine?: FairReadsEngine["wsEngine"] };
  /** Merged into socket.io's Server options (`parser` for raw acks). */
  readonly ioOptions: { parser?: typeof rawAckParser | typeof rawAckBytesParser };
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
  options: FastPathOptions = "all",
  probe?: (path: FastPath) => string | null,
): ServerTransport {
  const report = decideFastPaths(options, probe);
  const fairReads = report.fair_reads === "on" ? fairReadsEngine() : null;
  return {
    report,
    engineOptions: fairReads ? { wsEngine: fairReads.wsEngine } : {},
    ioOptions:
      report.raw_acks !== "on"
        ? {}
        : { parser: report.ack_bytes === "on" ? rawAckBytesParser : rawAckParser },
    attach(engine, nsp) {
      if (fairReads && !fairReads.used) {
        report.fair_reads =
          "unavailable: engine.io did not build its WebSocket server from wsEngine";
      }
      const batch = report.batch_writes === "on";
      const preframe = report.preframe === "on";
      if (batch) engine.on("connection", (session: Session) => corkSessionSends(session));
      if (report.ack_bytes === "on") {
        engine.on("connection", (session: Session) => keepSessionAckBytes(session));
      }
      if (batch || preframe) {
        nsp.on("connection", (socket) => {
          if (batch) flushPacketsWhole(socket.client);
          if (preframe) preframeLongTexts(socket.client);
        });
      }
    },
    carried: (ackArgs) => {
      const first = ackArgs[0];
      return first instanceof AckText ? first.carried : carriedOf(first);
    },
    meter: meterSession,
  };
}

/** `a2c_transport_fast_path{name,state}`: 1 for a fast path that is on, else 0. */
export function registerFastPathGauge(registry: Registry, report: TransportReport): void {
  new Gauge({
    name: "a2c_transport_fast_path",
    help: "Transport fast paths of this Server (server/transport/): 1 = on; 0 = off by option or unavailable in the installed libraries (state label; the reason is in /healthz)",
    labelNames: ["name", "state"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const path of FAST_PATHS) {
        const state = report[path];
        const label = state.startsWith("unavailable") ? "unavailable" : state;
        this.set({ name: path, state: label }, state === "on" ? 1 : 0);
      }
    },
  });
}
