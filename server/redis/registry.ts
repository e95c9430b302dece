/**
 * `OfficeRegistry` kept in Redis, shared by every Server node (redis/README.md). Each method is one Lua
 * script (see scripts.ts), so the D5 rules hold across nodes under concurrent joins.
 *
 * Every entry is owned by the node that joined it. When a join collides with an entry whose node
 * is dead (crashed, heartbeat expired), that node is reaped first and the join retried, so a
 * Computer that reconnects to a surviving node gets its name back at once instead of waiting out
 * a TTL. Reaped members are reported to `onReaped`, whose owner announces their departure.
 */
import { JoinRefusal, joinRefusal, type Role } from "@a2c-smcp/protocol";
import type { JoinOutcome, Member, OfficeCounts, OfficeRegistry } from "../offices.ts";
import { MEMBER_FIELDS, Scripts, type LuaScript } from "./scripts.ts";

/** The one command this file needs from a node-redis client (keeps tests and types simple). */
export interface RedisCommander {
  sendCommand<T = unknown>(args: ReadonlyArray<string>): Promise<T>;
}

/** A member as Redis stores it: also names the node that owns the socket. */
export interface RedisMember extends Member {
  readonly nodeId: string;
}

export interface RedisOfficeRegistryOptions {
  client: RedisCommander;
  /** This node's id (owner of every member it joins). */
  nodeId: string;
  /** Key prefix shared by all nodes of one deployment. Default `a2c`. */
  prefix?: string;
  /** Called with the members removed because their node died (never with an empty list). */
  onReaped?: (nodeId: string, members: RedisMember[]) => void;
  /** Redis failures the registry answered for instead of throwing (for the log). */
  onError?: (err: unknown) => void;
  /**
   * Whether a member that holds the seat a join asks for (its node alive) still has its socket.
   * `false` only when the holder's own node said so: the entry is a ghost (its removal has not
   * landed yet, e.g. its socket dropped while Redis was unreachable) and is removed so the join
   * proceeds. Anything else (no answer, an error) keeps the holder. Default: the holder is kept.
   */
  holderConnected?: (holder: RedisMember) => Promise<boolean | undefined>;
  /**
   * Longest wait for one registry command (default 5,000 ms). A dead Redis fails commands at once
   * (no offline queue); a hung one (stopped process, black-holed network) would leave a join,
   * a leave or a `list_room` unanswered forever without this bound.
   */
  commandTimeoutMs?: number;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

/** `promise`, or a rejection after `ms`; the late outcome of `promise` is swallowed. */
function bounded<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis command timed out after ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type Reply = ReadonlyArray<string | number>;

export class RedisOfficeRegistry implements OfficeRegistry {
  readonly nodeId: string;
  readonly prefix: string;
  private readonly client: RedisCommander;
  private readonly onReaped: (nodeId: string, members: RedisMember[]) => void;
  private readonly onError: (err: unknown) => void;
  private readonly commandTimeoutMs: number;
  private readonly holderConnected: (holder: RedisMember) => Promise<boolean | undefined>;
  /**
   * Members joined through this node, by sid. Only this node changes them (or a reap of this
   * node, after which it fences and calls `clearLocal`), so the relay's per-request sender check
   * costs no Redis round trip.
   */
  private readonly local = new Map<string, RedisMember>();

  constructor(opts: RedisOfficeRegistryOptions) {
    this.client = withScriptLoading(opts.client);
    this.nodeId = opts.nodeId;
    this.prefix = opts.prefix ?? "a2c";
    this.onReaped = opts.onReaped ?? (() => undefined);
    this.onError = opts.onError ?? (() => undefined);
    this.commandTimeoutMs = opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.holderConnected = opts.holderConnected ?? (() => Promise.resolve(undefined));
  }

  /**
   * Never throws: with Redis unreachable the join is refused `registry_unavailable`, a reason
   * that passes, so clients retry it (D55).
   */
  async join(member: Member): Promise<JoinOutcome> {
    try {
      return await this.tryJoin(member);
    } catch (err) {
      this.onError(err);
      return {
        ok: false,
        reason: joinRefusal(
          JoinRefusal.RegistryUnavailable,
          "Office registry unavailable, try joining again",
        ),
      };
    }
  }

  private async tryJoin(member: Member): Promise<JoinOutcome> {
    // Each retry follows the removal of one dead node's or one ghost's entry; three is more
    // than enough in practice.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const reply = await this.run(Scripts.join, [
        member.sid,
        member.name,
        member.role,
        member.officeId,
        member.a2cVersion,
        this.nodeId,
      ]);
      const [status, ...rest] = reply;
      switch (status) {
        case "ok": {
          const joined: RedisMember = { ...pick(member), nodeId: this.nodeId };
          const previous = rest.length > 0 ? toMember(rest) : null;
          if (previous) this.local.delete(previous.sid);
          this.local.set(joined.sid, joined);
          return { ok: true, member: joined, previous, unchanged: false };
        }
        case "unchanged":
          return { ok: true, member: toMember(rest), previous: null, unchanged: true };
        case "refused":
          return { ok: false, reason: `${String(rest[0])}: ${String(rest[1])}` };
        case "held": {
          const holder = toMember(rest.slice(2));
          if ((await this.holderConnected(holder)) !== false) {
            return { ok: false, reason: `${String(rest[0])}: ${String(rest[1])}` };
          }
          // A ghost: its socket is gone and its removal has not landed. Remove it silently;
          // the leave was announced when the socket dropped (membership.ts).
          this.local.delete(holder.sid);
          await this.run(Scripts.remove, [holder.sid]);
          continue;
        }
        case "stale":
          await this.reapNode(String(rest[0]));
          continue;
        case "fenced":
          return {
            ok: false,
            reason: joinRefusal(
              JoinRefusal.NodeFenced,
              "Server node lost its registration in Redis, join again",
            ),
          };
        default:
          throw new Error(`Unexpected join reply from Redis: ${String(status)}`);
      }
    }
    return { ok: false, reason: joinRefusal(JoinRefusal.OfficeBusy, "Office is busy, join again") };
  }

  async leave(sid: string, officeId: string): Promise<Member | null> {
    const removed = one(await this.run(Scripts.leave, [sid, officeId]));
    if (removed) this.local.delete(sid);
    return removed;
  }

  async remove(sid: string): Promise<Member | null> {
    this.local.delete(sid);
    return one(await this.run(Scripts.remove, [sid]));
  }

  async memberOf(sid: string): Promise<RedisMember | null> {
    return this.local.get(sid) ?? one(await this.run(Scripts.member, [sid]));
  }

  async findComputer(officeId: string, name: string): Promise<RedisMember | null> {
    return one(await this.run(Scripts.findComputer, [officeId, name]));
  }

  async list(officeId: string): Promise<RedisMember[]> {
    return many(await this.run(Scripts.list, [officeId]));
  }

  async counts(): Promise<OfficeCounts> {
    const [offices, agents, computers] = await this.run(Scripts.counts, []);
    return { offices: Number(offices), agents: Number(agents), computers: Number(computers) };
  }

  /** Registers (or re-registers) this node with a heartbeat that expires after `ttlMs`. */
  async registerNode(ttlMs: number): Promise<void> {
    await this.run(Scripts.registerNode, [this.nodeId, String(Math.ceil(ttlMs))]);
  }

  /** Refreshes this node's heartbeat. False means another node reaped this one: fence. */
  async heartbeat(ttlMs: number): Promise<boolean> {
    const ok = await this.client.sendCommand<number>(
      evalArgs(Scripts.heartbeat, [this.prefix, this.nodeId, String(Math.ceil(ttlMs))]),
    );
    return Number(ok) === 1;
  }

  /** Ids of every registered node (this one included). */
  async nodes(): Promise<string[]> {
    return this.client.sendCommand<string[]>(["SMEMBERS", `${this.prefix}:nodes`]);
  }

  /**
   * Removes every member of `nodeId` if that node is dead (or unconditionally with `force`, for a
   * node's own clean shutdown). Returns the removed members, or null if the node is alive.
   * Only the caller that actually removed members reports them, so each departure is announced once.
   */
  async reapNode(nodeId: string, force = false): Promise<RedisMember[] | null> {
    const [status, ...rest] = await this.run(Scripts.reapNode, [
      nodeId,
      force ? "1" : "0",
      this.nodeId,
    ]);
    if (status !== "reaped") return null;
    const members = many(rest);
    if (nodeId === this.nodeId) this.local.clear();
    if (members.length > 0) this.onReaped(nodeId, members);
    return members;
  }

  /** Forgets the local cache (this node was reaped by others and is fencing). */
  clearLocal(): void {
    this.local.clear();
  }

  /** The channel whose subscriber proves this node's adapter connection is alive. */
  livenessChannel(nodeId: string = this.nodeId): string {
    return `${this.prefix}:node:${nodeId}`;
  }

  private async run(script: LuaScript, args: string[]): Promise<Reply> {
    const reply: unknown = await bounded(
      this.client.sendCommand(evalArgs(script, [this.prefix, ...args])),
      this.commandTimeoutMs,
    );
    return Array.isArray(reply) ? (reply as Reply) : [];
  }
}

/** EVALSHA with zero declared keys (`withScriptLoading` loads the script when Redis lacks it). */
function evalArgs(script: LuaScript, argv: string[]): string[] {
  return ["EVALSHA", script.sha, "0", ...argv];
}

/**
 * Wraps a client so EVALSHA falls back to EVAL on NOSCRIPT (fresh or restarted Redis, or a
 * `SCRIPT FLUSH`); the script is then cached server-side for the next call.
 */
export function withScriptLoading(client: RedisCommander): RedisCommander {
  const bySha = new Map(Object.values(Scripts).map((s) => [s.sha, s.source]));
  return {
    async sendCommand<T>(args: ReadonlyArray<string>): Promise<T> {
      try {
        return await client.sendCommand<T>(args);
      } catch (err) {
        const source = args[0] === "EVALSHA" ? bySha.get(args[1] ?? "") : undefined;
        if (source === undefined || !String((err as Error).message).startsWith("NOSCRIPT")) {
          throw err;
        }
        return client.sendCommand<T>(["EVAL", source, ...args.slice(2)]);
      }
    },
  };
}

function pick(m: Member): Member {
  return {
    sid: m.sid,
    name: m.name,
    role: m.role,
    officeId: m.officeId,
    a2cVersion: m.a2cVersion,
  };
}

function toMember(f: Reply): RedisMember {
  return {
    sid: String(f[0]),
    name: String(f[1]),
    role: String(f[2]) as Role,
    officeId: String(f[3]),
    a2cVersion: String(f[4] ?? ""),
    nodeId: String(f[5] ?? ""),
  };
}

function one(reply: Reply): RedisMember | null {
  return reply.length >= MEMBER_FIELDS ? toMember(reply) : null;
}

function many(reply: Reply): RedisMember[] {
  const out: RedisMember[] = [];
  for (let i = 0; i + MEMBER_FIELDS <= reply.length; i += MEMBER_FIELDS) {
    out.push(toMember(reply.slice(i, i + MEMBER_FIELDS)));
  }
  return out;
}
