/**
 * The relay's `ComputerLink` when Server nodes share Redis (redis/README.md). A Computer socket on
 * this node is emitted to directly, exactly like the in-process link. A Computer socket on another
 * node is reached through the socket.io adapter with a broadcast-with-ack to its socket id
 * (`nsp.to(sid).timeout(ms).emit(...)`): the payload goes out unchanged and the Computer's single
 * ack argument comes back unchanged (D13; the adapter msgpack-encodes it, which keeps objects,
 * strings and Buffers as they were, and an ack the transport kept as text as its value).
 *
 * D11 across nodes. socket.io gives a requester no signal when the remote socket drops, so:
 * - the node that owns a Computer socket announces its disconnect to the other nodes
 *   (`serverSideEmit`, same Redis connection as its acks, so an answer sent before the drop
 *   arrives before the announcement);
 * - when a whole node dies, the node that reaps it announces each of its Computers;
 * - a request that reaches no socket at all (it dropped between lookup and send) is answered too.
 * Every such request is answered at once with `404 {computer_name, reason: "disconnected"}`.
 * Timeouts stay the relay's own (D10); the adapter wait is a little longer, only to free memory.
 */
import { computerNotFound, type ClientEvent } from "@a2c-smcp/protocol";
import type { SmcpNamespace, SmcpSocket } from "../connection.ts";
import type { Logger } from "../log.ts";
import type { ComputerLink } from "../relay.ts";

/** Server-side event that tells the other nodes "this Computer socket is gone". */
export const COMPUTER_GONE = "a2c:computer_gone";

/** Margin added to the adapter's ack wait beyond the relay timeout (cleanup only). */
const ADAPTER_WAIT_MARGIN_MS = 2_000;

export interface RemoteLinkOptions {
  nsp: SmcpNamespace;
  logger: Logger;
  /** The relay's timeouts, so the adapter never stops waiting before the relay does. */
  relayTimeoutMs: number;
  toolCallGraceMs: number;
}

interface Pending {
  readonly computerName: string;
  readonly onAck: (args: unknown[], how?: "answered" | "disconnected") => void;
  done: boolean;
}

export class RemoteComputerLink implements ComputerLink {
  /** Requests sent to sockets of other nodes and not answered yet, by target sid. */
  private readonly pending = new Map<string, Set<Pending>>();
  private readonly nsp: SmcpNamespace;

  constructor(private readonly opts: RemoteLinkOptions) {
    this.nsp = opts.nsp;
    this.nsp.on("connection", (socket: SmcpSocket) => {
      socket.on("disconnect", () => {
        // Only Computers receive client:* requests; only their drops concern other nodes.
        if (socket.data.lockedRole === "computer") this.announceGone(socket.id);
      });
    });
    this.nsp.on(COMPUTER_GONE, (sid: unknown) => {
      if (typeof sid === "string") this.computerGone(sid);
    });
  }

  /** Requests in flight to other nodes (diagnostics and tests). */
  get size(): number {
    let n = 0;
    for (const set of this.pending.values()) n += set.size;
    return n;
  }

  send(
    sid: string,
    event: ClientEvent,
    payload: unknown,
    onAck: (args: unknown[], how?: "answered" | "disconnected") => void,
  ): boolean {
    const local = this.nsp.sockets.get(sid);
    if (local) {
      if (!local.connected) return false;
      local.emit(event, payload, (...args: unknown[]) => onAck(args));
      return true;
    }
    const request = payload as { computer: string; timeout?: number };
    const entry: Pending = { computerName: request.computer, onAck, done: false };
    let set = this.pending.get(sid);
    if (!set) this.pending.set(sid, (set = new Set()));
    set.add(entry);
    const waitMs =
      (event === "client:tool_call"
        ? (request.timeout ?? 0) * 1000 + this.opts.toolCallGraceMs
        : this.opts.relayTimeoutMs) + ADAPTER_WAIT_MARGIN_MS;
    this.nsp
      .to(sid)
      .timeout(waitMs)
      .emit(event, payload, (err: Error | null, responses: unknown[]) => {
        const answer = responses[0];
        const answered = responses.length > 0;
        // The adapter keeps this request's callbacks, and through them this array, until
        // `waitMs` has passed even when the answer came at once. Emptying it lets a chunk's
        // bytes be freed as soon as they are relayed instead of piling up for 30 s.
        responses.length = 0;
        if (entry.done) return;
        if (answered) return this.settle(sid, entry, [answer]);
        // Nobody holds that socket any more: it dropped between lookup and send (D11).
        if (!err) return this.settle(sid, entry, [disconnected(entry)], "disconnected");
        // The adapter gave up after the relay's own timeout answered 408: just forget it.
        this.forget(sid, entry);
      });
    return true;
  }

  /** Answers every request in flight to `sid` on this node with 404 `disconnected`. */
  computerGone(sid: string): number {
    const set = this.pending.get(sid);
    if (!set) return 0;
    let n = 0;
    for (const entry of [...set]) {
      this.settle(sid, entry, [disconnected(entry)], "disconnected");
      n += 1;
    }
    if (n > 0) this.opts.logger.info({ sid, failed: n }, "remote Computer gone: in-flight failed");
    return n;
  }

  /** Tells this node and the others that Computer socket `sid` is gone. */
  announceGone(sid: string): void {
    this.computerGone(sid);
    this.nsp.serverSideEmit(COMPUTER_GONE, sid);
  }

  /** Shutdown: forget everything without answering (the relay drops its side too). */
  close(): void {
    for (const set of this.pending.values()) for (const entry of set) entry.done = true;
    this.pending.clear();
  }

  /** `how` tells the relay whether the Computer answered or dropped (its metrics count D11). */
  private settle(
    sid: string,
    entry: Pending,
    args: unknown[],
    how: "answered" | "disconnected" = "answered",
  ): void {
    this.forget(sid, entry);
    entry.onAck(args, how);
  }

  private forget(sid: string, entry: Pending): void {
    entry.done = true;
    const set = this.pending.get(sid);
    if (!set) return;
    set.delete(entry);
    if (set.size === 0) this.pending.delete(sid);
  }
}

function disconnected(entry: Pending): unknown {
  return computerNotFound(entry.computerName, "disconnected");
}
