/**
 * `server:join_office`, `server:leave_office`, `server:list_room` and the clean-up on disconnect
 * (docs/protocol.md, "Offices"; D5–D6). Joins and leaves answer with the two-argument tuple
 * `(true, null)` / `(false, "<token>: <text>")` (D55); `notify:enter_office` /
 * `notify:leave_office` go to the OTHER members of the office (the sender is skipped, D6).
 *
 * A socket that is gone must not keep its seat: when its removal fails (the registry's Redis is
 * unreachable), the removal is retried, every `REMOVAL_RETRY_MAX_MS` at the longest, until it
 * lands (D56). The others were told of the leave when the socket dropped.
 */
import type { Counter } from "prom-client";
import {
  EnterOfficeReqSchema,
  Events,
  LeaveOfficeReqSchema,
  ListRoomReqSchema,
  agentMismatch,
  badRequest,
  forbidden,
  internalError,
  JoinRefusal,
  joinRefusal,
  notInOffice,
  type EnterOfficeNotification,
  type ErrorPayload,
  type ListRoomRet,
} from "@a2c-smcp/protocol";
import { mayJoin } from "./auth.ts";
import { officeRoom, serialize, type SmcpNamespace, type SmcpSocket } from "./connection.ts";
import type { Logger } from "./log.ts";
import type { Member, OfficeRegistry } from "./offices.ts";
import { takeAck } from "./relay.ts";

const INVALID = joinRefusal(JoinRefusal.InvalidPayload, "Invalid request payload");
const REGISTRY_DOWN_TEXT = "Office registry unavailable, try again";
const REGISTRY_DOWN = joinRefusal(JoinRefusal.RegistryUnavailable, REGISTRY_DOWN_TEXT);

/** First retry of a failed removal, doubled per failure up to `REMOVAL_RETRY_MAX_MS`. */
const REMOVAL_RETRY_MIN_MS = 100;
/**
 * Longest wait between two tries of a failed removal: a seat of a gone socket is free at most
 * this long (plus one registry round trip) after the registry answers again (D56).
 */
export const REMOVAL_RETRY_MAX_MS = 1_000;

export interface MembershipOptions {
  nsp: SmcpNamespace;
  registry: OfficeRegistry;
  logger: Logger;
  /** `a2c_refusals_total{reason}` (a list_room under another agent's name). */
  refusals?: Counter<"reason">;
}

/** `{office_id, agent: name}` or `{office_id, computer: name}` (docs/protocol.md, "Offices"). */
export function officeNotification(member: Member): EnterOfficeNotification {
  return member.role === "agent"
    ? { office_id: member.officeId, agent: member.name }
    : { office_id: member.officeId, computer: member.name };
}

export class Membership {
  /** Sockets that are gone but whose removal from the registry has not landed yet, by sid. */
  private readonly unremoved = new Map<string, Member | null>();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = REMOVAL_RETRY_MIN_MS;
  private retrying = false;
  /** Removals landed by retries since the registry last failed one (for the closing log line). */
  private retried = 0;
  private closed = false;

  constructor(private readonly opts: MembershipOptions) {}

  /** Gone sockets whose removal from the registry is still being retried. */
  get pendingRemovals(): number {
    return this.unremoved.size;
  }

  join(socket: SmcpSocket, args: unknown[]): Promise<void> {
    const { rest, ack } = takeAck(args);
    const reply = (ok: boolean, reason: string | null): void => ack?.(ok, reason);
    const parsed = rest.length === 1 ? EnterOfficeReqSchema.safeParse(rest[0]) : null;
    if (!parsed?.success) {
      reply(false, INVALID);
      return Promise.resolve();
    }
    const req = parsed.data;
    const state = socket.data;
    return serialize(state, this.opts.logger, async () => {
      if (state.lockedRole !== null && state.lockedRole !== req.role) {
        return reply(
          false,
          joinRefusal(
            JoinRefusal.RoleLocked,
            `Role cannot change on the same connection (joined as ${state.lockedRole})`,
          ),
        );
      }
      if (!mayJoin(state.principal, req.office_id)) {
        this.opts.logger.warn(
          { principal: state.principal.id, office: req.office_id },
          "join refused: credential not scoped to this office",
        );
        return reply(
          false,
          joinRefusal(JoinRefusal.NotAuthorized, "Not authorized to join this office"),
        );
      }
      const outcome = await this.opts.registry.join({
        sid: socket.id,
        name: req.name,
        role: req.role,
        officeId: req.office_id,
        a2cVersion: state.a2cVersion,
      });
      if (!outcome.ok) return reply(false, outcome.reason);
      if (outcome.unchanged) return reply(true, null);
      const { member, previous } = outcome;
      if (previous) {
        // A Computer switching offices: the old office hears the leave before the new one hears
        // the enter.
        this.broadcastLeave(socket.id, previous);
        await socket.leave(officeRoom(previous.officeId));
      }
      state.member = member;
      state.lockedRole = member.role;
      await socket.join(officeRoom(member.officeId));
      this.opts.nsp
        .to(officeRoom(member.officeId))
        .except(socket.id)
        .emit(Events.EnterOfficeNotify, officeNotification(member));
      this.opts.logger.info(
        { sid: socket.id, role: member.role, member: member.name, office: member.officeId },
        "joined office",
      );
      reply(true, null);
    });
  }

  leave(socket: SmcpSocket, args: unknown[]): Promise<void> {
    const { rest, ack } = takeAck(args);
    const reply = (ok: boolean, reason: string | null): void => ack?.(ok, reason);
    const parsed = rest.length === 1 ? LeaveOfficeReqSchema.safeParse(rest[0]) : null;
    if (!parsed?.success) {
      reply(false, INVALID);
      return Promise.resolve();
    }
    const officeId = parsed.data.office_id;
    const state = socket.data;
    return serialize(state, this.opts.logger, async () => {
      const member = state.member;
      // Leaving an office one is not in changes nothing and is not an error (idempotent).
      if (member?.officeId === officeId) {
        try {
          await this.detach(socket, member);
        } catch (err) {
          // Registry unreachable (Redis down): still a clear answer, and the member is kept so
          // a retry really leaves.
          this.opts.logger.error({ err, sid: socket.id }, "leave_office failed");
          state.member = member;
          return reply(false, REGISTRY_DOWN);
        }
      }
      reply(true, null);
    });
  }

  /** `server:list_room`: the caller's own office only, only for its Agent, under its own name. */
  async listRoom(socket: SmcpSocket, args: unknown[]): Promise<void> {
    const { rest, ack } = takeAck(args);
    if (!ack) return;
    const parsed = rest.length === 1 ? ListRoomReqSchema.safeParse(rest[0]) : null;
    if (!parsed?.success) return ack(badRequest());
    const member = socket.data.member;
    if (!member) return ack(notInOffice());
    if (member.role !== "agent") return ack(forbidden());
    if (parsed.data.agent !== member.name) {
      this.opts.refusals?.inc({ reason: "agent_mismatch" });
      this.opts.logger.warn({ sid: socket.id }, "list_room under another agent's name refused");
      return ack(agentMismatch());
    }
    if (member.officeId !== parsed.data.office_id) {
      this.opts.logger.warn({ sid: socket.id }, "list_room of another office refused");
      return ack({
        code: 4104,
        message: "Cross-office access refused: list your own office only",
      } satisfies ErrorPayload);
    }
    let members: Member[];
    try {
      members = await this.opts.registry.list(member.officeId);
    } catch (err) {
      // Registry unreachable (Redis down): a flat error now, never a client-side timeout.
      this.opts.logger.error({ err, sid: socket.id }, "list_room failed");
      return ack(internalError(REGISTRY_DOWN_TEXT));
    }
    const answer: ListRoomRet = {
      sessions: members.map((m) => ({
        sid: m.sid,
        name: m.name,
        role: m.role,
        office_id: m.officeId,
        a2c_version: m.a2cVersion,
      })),
      req_id: parsed.data.req_id,
    };
    ack(answer);
  }

  /**
   * Disconnect or shutdown: leave the office (others are told) after any pending join/leave. A
   * removal the registry refuses is retried until it lands (D56).
   */
  disconnect(socket: SmcpSocket): Promise<void> {
    const state = socket.data;
    return serialize(state, this.opts.logger, async () => {
      const member = state.member;
      try {
        if (member) await this.detach(socket, member);
        else await this.opts.registry.remove(socket.id);
      } catch (err) {
        this.removeLater(socket.id, member, err);
      }
    });
  }

  /** Stops retrying removals (the Server is closing; other nodes reap what is left). */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (this.unremoved.size > 0) {
      this.opts.logger.warn(
        { members: this.unremoved.size },
        "closing with removals from the office registry not landed; other nodes reap them",
      );
    }
  }

  private removeLater(sid: string, member: Member | null, err: unknown): void {
    if (this.closed) return;
    const first = this.unremoved.size === 0;
    this.unremoved.set(sid, member);
    // One line when removals start failing; the retry says when they land.
    if (first) {
      this.opts.logger.error(
        { err, sid, member: member?.name, office: member?.officeId },
        "office registry unreachable: removal of a gone socket will be retried until it lands",
      );
    }
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.retrying || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.retryRemovals();
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  private async retryRemovals(): Promise<void> {
    this.retrying = true;
    try {
      for (const [sid, member] of this.unremoved) {
        if (this.closed) return;
        await this.opts.registry.remove(sid);
        this.unremoved.delete(sid);
        this.retried += 1;
        if (member) {
          this.opts.logger.info(
            { sid, role: member.role, member: member.name, office: member.officeId },
            "left office (removal retried)",
          );
        }
      }
      this.retryDelayMs = REMOVAL_RETRY_MIN_MS;
    } catch {
      this.retryDelayMs = Math.min(REMOVAL_RETRY_MAX_MS, this.retryDelayMs * 2);
    } finally {
      this.retrying = false;
      if (this.unremoved.size === 0 && this.retried > 0) {
        this.opts.logger.info(
          { removed: this.retried },
          "office registry reachable: removals landed",
        );
        this.retried = 0;
      }
      if (this.unremoved.size > 0) this.scheduleRetry();
    }
  }

  /** The leave flow: notify the others first ("before removing the member"), then remove. */
  private async detach(socket: SmcpSocket, member: Member): Promise<void> {
    this.broadcastLeave(socket.id, member);
    socket.data.member = null;
    await this.opts.registry.leave(socket.id, member.officeId);
    await socket.leave(officeRoom(member.officeId));
    this.opts.logger.info(
      { sid: socket.id, role: member.role, member: member.name, office: member.officeId },
      "left office",
    );
  }

  private broadcastLeave(sid: string, member: Member): void {
    this.opts.nsp
      .to(officeRoom(member.officeId))
      .except(sid)
      .emit(Events.LeaveOfficeNotify, officeNotification(member));
  }
}
