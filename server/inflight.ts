/**
 * The relay's table of requests forwarded to a Computer and not yet answered.
 *
 * socket.io never rejects a server-side pending ack when the peer disconnects, so the relay keeps
 * its own table, indexed three ways:
 * - by id, to settle one request exactly once (answer, timeout, Computer gone, Agent gone);
 * - by target Computer sid, so a Computer drop answers every request to it at once (D11);
 * - by origin Agent sid, so an Agent drop discards its requests (D12) and so the per-Agent cap
 *   on requests in flight is a size lookup.
 * Each entry owns one timer (D10), cleared on every settle path, so nothing outlives `clear()`.
 */
import type { ClientEvent } from "@a2c-smcp/protocol";

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
