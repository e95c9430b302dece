/**
 * Prometheus metrics (prom-client), one Registry per Server instance so several Servers in one
 * process (tests, the stack) never share counters. Gauges are computed at scrape time from the
 * live state; counters are bumped on the hot path with label values from small fixed sets.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { OfficeCounts } from "./offices.ts";

/** Outcome label of `a2c_relay_requests_total`. */
export type RelayOutcome =
  | "answered"
  | "bad_request"
  | "not_in_office"
  | "forbidden"
  | "agent_mismatch"
  | "not_found"
  | "timeout"
  | "disconnected"
  | "origin_gone"
  | "busy"
  | "no_ack"
  | "unsendable"
  | "shutdown";

export interface MetricsSources {
  /** Connected sockets by role (`agent`, `computer`, `none` before joining). */
  connections(): Record<"agent" | "computer" | "none", number>;
  counts(): Promise<OfficeCounts>;
  inflight(): number;
}

export class ServerMetrics {
  readonly registry = new Registry();
  readonly relayed: Counter<"event" | "outcome">;
  readonly latency: Histogram<"event">;
  /** Decoded resource bytes relayed in acks, by event and carriage. */
  readonly resourceBytes: Counter<"event" | "carriage">;
  readonly authFailures: Counter;
  readonly gateRefusals: Counter<"code">;
  readonly refusals: Counter<"reason">;

  constructor(sources: MetricsSources, processMetrics: boolean) {
    const registers = [this.registry];
    new Gauge({
      name: "a2c_connections",
      help: "Connected /smcp sockets by role (none = not joined to an office yet)",
      labelNames: ["role"] as const,
      registers,
      collect() {
        const by = sources.connections();
        for (const role of ["agent", "computer", "none"] as const) this.set({ role }, by[role]);
      },
    });
    new Gauge({
      name: "a2c_offices",
      help: "Offices with at least one member",
      registers,
      async collect() {
        this.set((await sources.counts()).offices);
      },
    });
    new Gauge({
      name: "a2c_relay_inflight",
      help: "client:* requests forwarded to a Computer and not answered yet",
      registers,
      collect() {
        this.set(sources.inflight());
      },
    });
    this.relayed = new Counter({
      name: "a2c_relay_requests_total",
      help: "client:* requests by event and outcome",
      labelNames: ["event", "outcome"] as const,
      registers,
    });
    this.latency = new Histogram({
      name: "a2c_relay_latency_seconds",
      help: "Time from forwarding a client:* request to the Computer's ack",
      labelNames: ["event"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.resourceBytes = new Counter({
      name: "a2c_relay_resource_bytes_total",
      help:
        "Resource bytes relayed in acks (get_blob blob, get_skill body), decoded: base64 counted " +
        "from its length and padding, never decoded; binary by its size; inline text as UTF-8",
      labelNames: ["event", "carriage"] as const,
      registers,
    });
    this.authFailures = new Counter({
      name: "a2c_auth_failures_total",
      help: "Connections refused by the auth provider",
      registers,
    });
    this.gateRefusals = new Counter({
      name: "a2c_version_gate_refusals_total",
      help: "HTTP requests and upgrades refused by the version gate, by A2C code",
      labelNames: ["code"] as const,
      registers,
    });
    this.refusals = new Counter({
      name: "a2c_refusals_total",
      help: "Requests refused for what they are, by reason (agent_mismatch: a request under another agent's name; unknown_event: an event the Server does not handle, with an ack)",
      labelNames: ["reason"] as const,
      registers,
    });
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
