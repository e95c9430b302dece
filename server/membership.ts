/**
 * `server:join_office`, `server:leave_office`, `server:list_room` and the clean-up on disconnect
 * (docs/protocol.md, "Offices"; D5–D6). Joins and leaves answer with the two-argument tuple
 * `(true, null)` / `(false, "<reason>")`; `notify:enter_office` / `notify:leave_office` go to the
 * OTHER members of the office (the sender is skipped, D6).
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

const INVALID = "Invalid request payload";
const REGISTRY_DOWN = "Office registry unavailable: try again";

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
  constructor(private readonly opts: MembershipOptions) {}

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
          `Role cannot change on the same connection (joined as ${state.lockedRole})`,
        );
      }
      if (!mayJoin(state.principal, req.office_id)) {
        this.opts.logger.warn(
          { principal: state.principal.id, office: req.office_id },
          "join refused: credential not scoped to this office",
        );
        return reply(false, "Not authorized to join this office");
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
      return ack(internalError(REGISTRY_DOWN));
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

  /** Disconnect or shutdown: leave the office (others are told) after any pending join/leave. */
  disconnect(socket: SmcpSocket): Promise<void> {
    const state = socket.data;
    return serialize(state, this.opts.logger, async () => {
      const member = state.member;
      if (member) await this.detach(socket, member);
      else await this.opts.registry.remove(socket.id);
    });
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
