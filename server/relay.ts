/**
 * Routing of every `client:*` request (docs/protocol.md, "Routed requests"; D7–D13). Checks run in
 * the decided order and every refusal is a flat ErrorPayload ack, never silence ("an Agent must
 * not wait for a timeout to learn what the Server already knows"):
 *   schema (400) → sender in an office (4103) → sender is the office's Agent (403) → `agent` is
 *   the sender's own name (403 `agent_mismatch`) → requests in flight and bytes queued for the
 *   sender within bounds (500 `busy`) → Computer of that name in the SENDER's office (404,
 *   identical whether the name exists in another office or not) → for `client:put_blob`, the
 *   upload bytes in flight to that Computer within bounds (500 `busy`) → forward the original
 *   payload → relay the ack unchanged,
 *   with 408 on relay timeout, an immediate 404 `disconnected` when the Computer drops, a 500 when
 *   the request or its answer cannot be encoded, and a silent drop when the Agent itself drops.
 * Every one of those paths settles the request's in-flight entry (`InflightTable`, below) and
 * gives back the bytes reserved for its answer (outbound.ts).
 * The relay never parses or rebuilds an answer (D13): it hands the Agent's ack the arguments the
 * Computer's ack delivered, whatever form the transport gave them (transport/: a text ack may
 * arrive as its JSON text, binary attachments (D19) as the Buffers socket.io decoded).
 */
import {
  CLIENT_REQUEST_SCHEMAS,
  Events,
  agentMismatch,
  badRequest,
  computerNotFound,
  forbidden,
  internalError,
  notInOffice,
  plainGetBlob,
  relayTimeout,
  type ClientEvent,
  type ErrorPayload,
} from "@a2c-smcp/protocol";
import { limitRefusal, type LimitMetrics } from "./limits.ts";
import type { SmcpNamespace } from "./connection.ts";
import type { Logger } from "./log.ts";
import type { RelayOutcome, ServerMetrics } from "./metrics.ts";
import type { Member, OfficeRegistry } from "./offices.ts";
import type { OutboundAccount, OutboundGuard } from "./outbound.ts";
import type { Carried } from "./transport/index.ts";

/**
 * How the relay reaches a Computer socket. The in-process link emits on the local socket; a
 * multi-node deployment supplies one that reaches sockets on other nodes.
 */
export interface ComputerLink {
  /**
   * Emits `event` with `payload` (as received, unchanged) to the Computer socket `sid`, and calls
   * `onAck` with the Computer's ack arguments when it answers. Returns false if that socket cannot
   * be reached now (then `onAck` is never called). A link that learns the Computer dropped
   * (another node's socket) calls `onAck` with `"disconnected"`, so it is answered and counted
   * as D11, not as an answer. Ack arguments are the transport's: pass them on as they are (an ack
   * kept as text serializes, through JSON or msgpack, as the value it stands for).
   */
  send(
    sid: string,
    event: ClientEvent,
    payload: unknown,
    onAck: (args: unknown[], how?: "answered" | "disconnected") => void,
  ): boolean;
}

/** The in-process ComputerLink: emit on the local socket with a plain ack (timeouts are ours). */
export function localLink(nsp: SmcpNamespace): ComputerLink {
  return {
    send(sid, event, payload, onAck) {
      const socket = nsp.sockets.get(sid);
      if (!socket?.connected) return false;
      socket.emit(event, payload, (...args: unknown[]) => onAck(args));
      return true;
    },
  };
}

/** The sending socket as the relay needs to see it. */
export interface RelaySender {
  readonly sid: string;
  /** Its office membership (connection state kept by the membership handlers), or null. */
  readonly member: Member | null;
  isConnected(): boolean;
  /** Its outbound accounting (outbound.ts); absent when not watched. */
  readonly outbound?: OutboundAccount | undefined;
}

export interface RelayOptions {
  registry: OfficeRegistry;
  link: ComputerLink;
  metrics: ServerMetrics;
  logger: Logger;
  /** Relay timeout of `client:get_*` (D10). */
  relayTimeoutMs: number;
  /** Added to a tool call's own `timeout` (D10: `timeout + 5 s`). */
  toolCallGraceMs: number;
  /** Requests in flight per Agent socket; beyond it a flat error at once, never a queue. */
  maxInflightPerAgent: number;
  /** Bytes queued for each client, and the reservations that bound them. */
  outbound?: OutboundGuard;
  /** `a2c_limit_refusals_total`, for the in-flight cap. */
  limitMetrics?: LimitMetrics;
  /** The largest message a Computer may send (what an answer can take at most). */
  maxHttpBufferSize: number;
  /** What an answer carried, from its ack arguments (the transport's `carried`). */
  carried: (ackArgs: readonly unknown[]) => Carried;
  /**
   * The account that bounds upload chunks to a Computer socket (outbound.ts): its own on this
   * node, a tally of what this node forwarded for one on another node.
   */
  targetAccount?: (sid: string) => OutboundAccount | undefined;
}

type Ack = (...args: unknown[]) => void;
type Release = () => void;
const NO_RESERVATION = { release: (): void => undefined };

/** About what one upload chunk request takes: its blob (base64 text or attachment) and envelope. */
export function uploadBytes(payload: unknown): number {
  const blob = (payload as { blob?: unknown } | null)?.blob;
  const body =
    typeof blob === "string" ? blob.length : blob instanceof Uint8Array ? blob.byteLength : 0;
  return body + 512;
}

/** Splits socket.io handler arguments into the payload arguments and the ack callback. */
export function takeAck(args: unknown[]): { rest: unknown[]; ack: Ack | undefined } {
  const last = args.at(-1);
  if (typeof last === "function") return { rest: args.slice(0, -1), ack: last as Ack };
  return { rest: args, ack: undefined };
}

export class Relay {
  readonly inflight = new InflightTable();

  constructor(private readonly opts: RelayOptions) {}

  /** Handles one `client:*` emit. Never throws; never leaves an asked-for ack unanswered. */
  async route(event: ClientEvent, sender: RelaySender, args: unknown[]): Promise<void> {
    const { rest, ack } = takeAck(args);
    if (!ack) {
      // Without an ack nobody can receive an answer: routing would only load the Computer.
      this.count(event, "no_ack");
      this.opts.logger.debug({ event, sid: sender.sid }, "client request without ack ignored");
      return;
    }
    try {
      await this.routeWithAck(event, sender, rest, ack);
    } catch (err) {
      this.opts.logger.error({ err, event, sid: sender.sid }, "relay failure");
      ack({ code: 500, message: "Internal error" } satisfies ErrorPayload);
    }
  }

  /** D11: the Computer `sid` disconnected; answer everything in flight to it now. */
  computerGone(sid: string): number {
    return this.inflight.settleTarget(sid, "disconnected");
  }

  /** D12: the Agent `sid` disconnected; drop its requests and any late answers. */
  originGone(sid: string): number {
    return this.inflight.settleOrigin(sid, "origin_gone");
  }

  /** Shutdown: drop everything without answering and clear every timer. */
  close(): void {
    this.inflight.clear("shutdown");
  }

  private async routeWithAck(
    event: ClientEvent,
    sender: RelaySender,
    rest: unknown[],
    ack: Ack,
  ): Promise<void> {
    // D7: exactly one payload argument that passes the request schema.
    let request: { agent: string; computer: string; timeout?: number };
    if (rest.length === 1 && event === Events.GetBlob && plainGetBlob(rest[0])) {
      request = rest[0];
    } else {
      const parsed = rest.length === 1 ? CLIENT_REQUEST_SCHEMAS[event].safeParse(rest[0]) : null;
      if (!parsed?.success) return this.refuse(event, ack, badRequest(), "bad_request");
      request = parsed.data as { agent: string; computer: string; timeout?: number };
    }

    // D8: "events from a client that has not joined an office are refused".
    const member = sender.member;
    if (!member) return this.refuse(event, ack, notInOffice(), "not_in_office");
    if (member.role !== "agent") {
      this.opts.logger.warn({ event, sid: sender.sid }, "client:* from a non-Agent refused");
      return this.refuse(event, ack, forbidden(), "forbidden");
    }
    if (request.agent !== member.name) {
      this.opts.logger.warn(
        { event, sid: sender.sid },
        "client:* under another agent's name refused",
      );
      this.opts.metrics.refusals.inc({ reason: "agent_mismatch" });
      return this.refuse(event, ack, agentMismatch(), "agent_mismatch");
    }
    const max = this.opts.maxInflightPerAgent;
    if (this.inflight.countForOrigin(sender.sid) >= max) {
      this.opts.limitMetrics?.refusals.inc({ limit: "requests_in_flight" });
      const answer = limitRefusal(
        "requests_in_flight",
        `Too many requests in flight from this client (limit ${max})`,
        max,
      );
      return this.refuse(event, ack, answer, "busy");
    }
    const reservation = this.opts.outbound
      ? this.opts.outbound.reserve(sender.outbound, event, rest[0], this.opts.maxHttpBufferSize)
      : NO_RESERVATION;
    if ("refused" in reservation) return this.refuse(event, ack, reservation.answer, "busy");
    const release = reservation.release;
    try {
      await this.forward(event, sender, member, request, rest[0], ack, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** From the Computer lookup on; `release` gives back the answer's reservation when it settles. */
  private async forward(
    event: ClientEvent,
    sender: RelaySender,
    member: Member,
    request: { computer: string; timeout?: number },
    payload: unknown,
    ack: Ack,
    releaseAnswer: Release,
  ): Promise<void> {
    let release = releaseAnswer;
    // D9: lookup is scoped to the sender's office, so a name in another office is simply absent.
    const target = await this.opts.registry.findComputer(member.officeId, request.computer);
    if (!sender.isConnected()) {
      // The Agent dropped while we looked: nothing to answer (D12).
      release();
      return this.count(event, "origin_gone");
    }
    if (!target) {
      this.opts.logger.info(
        { event, office: member.officeId, computer: request.computer },
        "client:* to an unknown Computer",
      );
      release();
      return this.refuse(event, ack, computerNotFound(request.computer), "not_found");
    }

    if (event === Events.PutBlob && this.opts.outbound) {
      // What the Server and the Computer hold of one Computer's uploads is bounded (outbound.ts).
      const account = this.opts.targetAccount?.(target.sid);
      const upload = this.opts.outbound.reserveUpload(account, uploadBytes(payload));
      if ("refused" in upload) {
        release();
        return this.refuse(event, ack, upload.answer, "busy");
      }
      release = () => {
        releaseAnswer();
        upload.release();
      };
    }

    const timeoutMs =
      event === Events.ToolCall
        ? (request.timeout ?? 0) * 1000 + this.opts.toolCallGraceMs
        : this.opts.relayTimeoutMs;
    const entry = this.inflight.add(
      {
        event,
        originSid: sender.sid,
        targetSid: target.sid,
        computerName: target.name,
        settle: this.onSettle(event, ack, release, target.name),
      },
      timeoutMs,
    );
    let sent: boolean;
    try {
      // D13: the original payload object, not the schema's output.
      sent = this.opts.link.send(target.sid, event, payload, (ackArgs, how = "answered") => {
        this.inflight.settle(entry.id, how, ackArgs);
      });
    } catch (err) {
      // socket.io-parser cannot encode it (e.g. an array nested 100,000 deep overflows its
      // stack): nothing was sent, so the entry is settled here and the Agent told at once.
      this.opts.logger.warn({ err, event, sid: sender.sid }, "request could not be forwarded");
      this.inflight.settle(entry.id, "unsendable", []);
      return;
    }
    if (!sent) {
      // The Computer vanished between lookup and send: same answer as an unknown name.
      this.inflight.remove(entry.id);
      release();
      this.refuse(event, ack, computerNotFound(request.computer), "not_found");
    }
  }

  /**
   * What runs when one forwarded request settles: gives back its reservation and answers the
   * Agent.
   */
  private onSettle(
    event: ClientEvent,
    ack: Ack,
    release: Release,
    computerName: string,
  ): (how: Settlement, ackArgs: unknown[]) => void {
    const startedAt = process.hrtime.bigint();
    return (how, ackArgs) => {
      release();
      this.finish(event, how, ackArgs, ack, computerName, startedAt);
    };
  }

  private refuse(event: ClientEvent, ack: Ack, answer: ErrorPayload, outcome: RelayOutcome): void {
    this.count(event, outcome);
    ack(answer);
  }

  private finish(
    event: ClientEvent,
    how: Settlement,
    ackArgs: unknown[],
    ack: Ack,
    computerName: string,
    startedAt: bigint,
  ): void {
    switch (how) {
      case "answered": {
        const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
        this.opts.metrics.latency.observe({ event }, seconds);
        // Decoded resource bytes by carriage (nothing for answers that carry none).
        const { bytes, carriage } = this.opts.carried(ackArgs);
        if (carriage !== null && bytes > 0) {
          this.opts.metrics.resourceBytes.inc({ event, carriage }, bytes);
        }
        try {
          ack(...ackArgs); // D13: relayed unchanged, every argument as the Computer sent it
        } catch (err) {
          // The answer cannot be encoded for the Agent (socket.io-parser's recursion): say so.
          this.opts.logger.warn(
            { err, event, computer: computerName },
            "answer could not be relayed",
          );
          this.count(event, "unsendable");
          ack(internalError("The Computer's answer could not be relayed"));
          return;
        }
        this.count(event, "answered");
        return;
      }
      case "unsendable":
        this.count(event, "unsendable");
        ack(internalError("The request could not be forwarded"));
        return;
      case "timeout":
        this.count(event, "timeout");
        this.opts.logger.warn({ event, computer: computerName }, "relay timeout");
        ack(relayTimeout(computerName));
        return;
      case "disconnected":
        this.count(event, "disconnected");
        ack(computerNotFound(computerName, "disconnected"));
        return;
      case "origin_gone":
      case "shutdown":
        // Spec: the Server "MAY silently drop it (no ack, no ErrorPayload, no new code)".
        this.count(event, how);
        return;
    }
  }

  private count(event: ClientEvent, outcome: RelayOutcome): void {
    this.opts.metrics.relayed.inc({ event, outcome });
  }
}

// ---------------------------------------------------------------------------------------------
// The in-flight table

/** How a request ended, as counted in metrics (`unsendable`: it could not be encoded). */
export type Settlement =
  "answered" | "timeout" | "disconnected" | "origin_gone" | "shutdown" | "unsendable";

export interface InflightEntry {
  readonly id: number;
  readonly event: ClientEvent;
  readonly originSid: string;
  readonly targetSid: string;
  readonly computerName: string;
  timer: NodeJS.Timeout | undefined;
  /** Called exactly once, with the way the request ended and the Computer's ack arguments. */
  readonly settle: (how: Settlement, args: unknown[]) => void;
}

/**
 * The requests forwarded to a Computer and not yet answered. socket.io never rejects a
 * server-side pending ack when the peer disconnects, so the relay keeps its own table, indexed
 * three ways:
 * - by id, to settle one request exactly once (answer, timeout, Computer gone, Agent gone);
 * - by target Computer sid, so a Computer drop answers every request to it at once (D11);
 * - by origin Agent sid, so an Agent drop discards its requests (D12) and so the per-Agent cap
 *   on requests in flight is a size lookup.
 * Each entry owns one timer (D10), cleared on every settle path, so nothing outlives `clear()`.
 */
export class InflightTable {
  private nextId = 1;
  private readonly byId = new Map<number, InflightEntry>();
  private readonly byTarget = new Map<string, Set<InflightEntry>>();
  private readonly byOrigin = new Map<string, Set<InflightEntry>>();

  get size(): number {
    return this.byId.size;
  }

  countForOrigin(originSid: string): number {
    return this.byOrigin.get(originSid)?.size ?? 0;
  }

  /** Records a request; `timeoutMs` later it settles as `timeout` unless settled before. */
  add(fields: Omit<InflightEntry, "id" | "timer">, timeoutMs: number): InflightEntry {
    // Field by field: V8 takes a slow path for a spread into a literal with more keys.
    const entry: InflightEntry = {
      id: this.nextId++,
      event: fields.event,
      originSid: fields.originSid,
      targetSid: fields.targetSid,
      computerName: fields.computerName,
      timer: undefined,
      settle: fields.settle,
    };
    this.byId.set(entry.id, entry);
    index(this.byTarget, entry.targetSid, entry);
    index(this.byOrigin, entry.originSid, entry);
    entry.timer = setTimeout(() => this.settle(entry.id, "timeout", []), timeoutMs);
    return entry;
  }

  /** Settles one request if it is still open; returns false for a late or duplicate answer. */
  settle(id: number, how: Settlement, args: unknown[]): boolean {
    const entry = this.remove(id);
    if (!entry) return false;
    entry.settle(how, args);
    return true;
  }

  /** Forgets one request without settling it (it was never sent); returns it if it was open. */
  remove(id: number): InflightEntry | undefined {
    const entry = this.byId.get(id);
    if (!entry) return undefined;
    this.byId.delete(id);
    unindex(this.byTarget, entry.targetSid, entry);
    unindex(this.byOrigin, entry.originSid, entry);
    clearTimeout(entry.timer);
    return entry;
  }

  /** Settles every open request to one Computer (it disconnected). Returns how many. */
  settleTarget(targetSid: string, how: Settlement): number {
    return this.settleAll(this.byTarget.get(targetSid), how);
  }

  /** Settles every open request from one Agent (it disconnected). Returns how many. */
  settleOrigin(originSid: string, how: Settlement): number {
    return this.settleAll(this.byOrigin.get(originSid), how);
  }

  /** Settles everything (server shutdown). */
  clear(how: Settlement): number {
    return this.settleAll(new Set(this.byId.values()), how);
  }

  private settleAll(entries: Set<InflightEntry> | undefined, how: Settlement): number {
    if (!entries) return 0;
    let n = 0;
    for (const entry of [...entries]) if (this.settle(entry.id, how, [])) n += 1;
    return n;
  }
}

function index(map: Map<string, Set<InflightEntry>>, key: string, entry: InflightEntry): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(entry);
}

function unindex(map: Map<string, Set<InflightEntry>>, key: string, entry: InflightEntry): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(entry);
  if (set.size === 0) map.delete(key);
}
