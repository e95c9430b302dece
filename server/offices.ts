/**
 * Offices (docs/protocol.md, "Offices"; D5). `OfficeRegistry` is the seam between the relay and the
 * storage of who is where: every method is async and every mutation is atomic per call, so a
 * shared (e.g. Redis) implementation can replace `MemoryOfficeRegistry` without touching the
 * relay. The registry stores membership only; socket.io rooms, notifications and in-flight
 * requests are the caller's business.
 */
import { JoinRefusal, joinRefusal, type Role } from "@a2c-smcp/protocol";

/** One joined socket. `sid` is the socket.io socket id (unique across nodes). */
export interface Member {
  readonly sid: string;
  readonly name: string;
  readonly role: Role;
  readonly officeId: string;
  /** The client's `a2c_version` admitted by the gate (shown in `server:list_room`). */
  readonly a2cVersion: string;
}

export type JoinOutcome =
  /** Joined. `previous` is the membership this join replaced (a Computer switching offices). */
  | { ok: true; member: Member; previous: Member | null; unchanged: boolean }
  /** `reason` is the ack's `"<token>: <text>"` (D55; `joinRefusal`). */
  | { ok: false; reason: string };

export interface OfficeCounts {
  offices: number;
  agents: number;
  computers: number;
}

export interface OfficeRegistry {
  /**
   * Atomically checks the rules of D5 and records `member`:
   * - at most one Agent per office (`agent_present`: "Room already has an agent");
   * - Computer names unique within an office;
   * - an Agent already in office A must leave A before joining B;
   * - a Computer already in office A joining B is moved (A's membership returned as `previous`);
   * - joining the office one is already in, under the same name, is a no-op (`unchanged`).
   * Role locking per connection is the caller's job (it is connection state, not membership).
   */
  join(member: Member): Promise<JoinOutcome>;
  /** Removes `sid` from `officeId` if it is there; returns the removed membership. */
  leave(sid: string, officeId: string): Promise<Member | null>;
  /** Removes `sid` from whatever office it is in (disconnect, shutdown). */
  remove(sid: string): Promise<Member | null>;
  /** The membership of `sid`, if any. */
  memberOf(sid: string): Promise<Member | null>;
  /** The Computer called `name` in `officeId` — never a Computer of another office (D9). */
  findComputer(officeId: string, name: string): Promise<Member | null>;
  /** Every member of one office (Agent first, then Computers in join order). */
  list(officeId: string): Promise<Member[]>;
  counts(): Promise<OfficeCounts>;
}

interface Office {
  agent: Member | null;
  computers: Map<string, Member>; // by name
}

/** In-process registry: one Node process, no sharing. Each method's body runs without awaiting. */
export class MemoryOfficeRegistry implements OfficeRegistry {
  private readonly offices = new Map<string, Office>();
  private readonly bySid = new Map<string, Member>();

  async join(member: Member): Promise<JoinOutcome> {
    const current = this.bySid.get(member.sid) ?? null;
    if (current && current.officeId === member.officeId) {
      if (current.name === member.name && current.role === member.role) {
        return { ok: true, member: current, previous: null, unchanged: true };
      }
      return {
        ok: false,
        reason: joinRefusal(
          JoinRefusal.AlreadyJoined,
          `Already in office '${member.officeId}' as '${current.name}', leave it first`,
        ),
      };
    }
    if (current && current.role === "agent") {
      return {
        ok: false,
        reason: joinRefusal(
          JoinRefusal.AgentElsewhere,
          `Agent is already in office '${current.officeId}', leave it before joining another`,
        ),
      };
    }
    const office = this.offices.get(member.officeId);
    if (member.role === "agent" && office?.agent) {
      return {
        ok: false,
        reason: joinRefusal(JoinRefusal.AgentPresent, "Room already has an agent"),
      };
    }
    if (member.role === "computer" && office?.computers.has(member.name)) {
      return {
        ok: false,
        reason: joinRefusal(
          JoinRefusal.NameTaken,
          `A Computer named '${member.name}' is already in office '${member.officeId}'`,
        ),
      };
    }
    // All checks passed: only now touch the old office (a failed join leaves the Computer where it was).
    const previous = current ? this.detach(current) : null;
    const target = office ?? { agent: null, computers: new Map<string, Member>() };
    if (member.role === "agent") target.agent = member;
    else target.computers.set(member.name, member);
    this.offices.set(member.officeId, target);
    this.bySid.set(member.sid, member);
    return { ok: true, member, previous, unchanged: false };
  }

  async leave(sid: string, officeId: string): Promise<Member | null> {
    const current = this.bySid.get(sid);
    if (!current || current.officeId !== officeId) return null;
    return this.detach(current);
  }

  async remove(sid: string): Promise<Member | null> {
    const current = this.bySid.get(sid);
    return current ? this.detach(current) : null;
  }

  async memberOf(sid: string): Promise<Member | null> {
    return this.bySid.get(sid) ?? null;
  }

  async findComputer(officeId: string, name: string): Promise<Member | null> {
    return this.offices.get(officeId)?.computers.get(name) ?? null;
  }

  async list(officeId: string): Promise<Member[]> {
    const office = this.offices.get(officeId);
    if (!office) return [];
    return [...(office.agent ? [office.agent] : []), ...office.computers.values()];
  }

  async counts(): Promise<OfficeCounts> {
    let agents = 0;
    let computers = 0;
    for (const office of this.offices.values()) {
      if (office.agent) agents += 1;
      computers += office.computers.size;
    }
    return { offices: this.offices.size, agents, computers };
  }

  private detach(member: Member): Member {
    this.bySid.delete(member.sid);
    const office = this.offices.get(member.officeId);
    if (office) {
      if (member.role === "agent" && office.agent?.sid === member.sid) office.agent = null;
      if (member.role === "computer" && office.computers.get(member.name)?.sid === member.sid) {
        office.computers.delete(member.name);
      }
      if (!office.agent && office.computers.size === 0) this.offices.delete(member.officeId);
    }
    return member;
  }
}
