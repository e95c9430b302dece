/** Offices (rooms): join, leave, list, and the notifications around them (protocol.md §3). */
import { z } from "zod";
import { AgentCallDataSchema, LIMITS, NameString } from "./common.ts";

export const RoleSchema = z.enum(["agent", "computer"]);
export type Role = z.infer<typeof RoleSchema>;

export const OfficeId = z.string().min(1).max(LIMITS.officeId);

/** `server:join_office` payload. `role` is declared here and nowhere else (D3). */
export const EnterOfficeReqSchema = z.looseObject({
  role: RoleSchema,
  name: NameString,
  office_id: OfficeId,
});
export type EnterOfficeReq = z.infer<typeof EnterOfficeReqSchema>;

/** `server:leave_office` payload. */
export const LeaveOfficeReqSchema = z.looseObject({
  office_id: OfficeId,
});
export type LeaveOfficeReq = z.infer<typeof LeaveOfficeReqSchema>;

/** `notify:enter_office`: the unused one of `agent` / `computer` may be absent or null. */
export const EnterOfficeNotificationSchema = z.looseObject({
  office_id: OfficeId,
  computer: NameString.nullish(),
  agent: NameString.nullish(),
});
export type EnterOfficeNotification = z.infer<typeof EnterOfficeNotificationSchema>;

/** `notify:leave_office`: same shape as enter. */
export const LeaveOfficeNotificationSchema = EnterOfficeNotificationSchema;
export type LeaveOfficeNotification = EnterOfficeNotification;

/** `server:update_skills|tool_list|config|desktop` and their `notify:*` twins. */
export const UpdateComputerConfigReqSchema = z.looseObject({
  computer: NameString,
});
export type UpdateComputerConfigReq = z.infer<typeof UpdateComputerConfigReqSchema>;

/** `server:tool_call_cancel` and `notify:tool_call_cancel` carry the original call's ids. */
export const ToolCallCancelSchema = AgentCallDataSchema;
export type ToolCallCancel = z.infer<typeof ToolCallCancelSchema>;

/** `server:list_room` request. */
export const ListRoomReqSchema = AgentCallDataSchema.extend({
  office_id: OfficeId,
});
export type ListRoomReq = z.infer<typeof ListRoomReqSchema>;

export const SessionInfoSchema = z.looseObject({
  sid: z.string(),
  name: z.string(),
  role: RoleSchema,
  office_id: z.string(),
  a2c_version: z.string().optional(),
});
export type SessionInfo = z.infer<typeof SessionInfoSchema>;

export const ListRoomRetSchema = z.looseObject({
  sessions: z.array(SessionInfoSchema),
  req_id: z.string(),
});
export type ListRoomRet = z.infer<typeof ListRoomRetSchema>;

/**
 * Why a `server:join_office` (or `server:leave_office`) was refused: the ack's reason string is
 * `"<token>: <text>"` (D55), so a client can act on the token while a person reads the text. The
 * set is open: a client treats a token it does not know (or a reason without one) as final.
 */
export const JoinRefusal = {
  /** The payload failed its schema. */
  InvalidPayload: "invalid_payload",
  /** The connection already joined under the other role. */
  RoleLocked: "role_locked",
  /** The credential is not scoped to this office (D4). */
  NotAuthorized: "not_authorized",
  /** The connection is in this office under another name: leave first. */
  AlreadyJoined: "already_joined",
  /** An Agent in another office must leave it before joining this one (D5). */
  AgentElsewhere: "agent_elsewhere",
  /** The office already has an Agent (D5). */
  AgentPresent: "agent_present",
  /** A live Computer of this name is in the office (D5). */
  NameTaken: "name_taken",
  /** The office registry (Redis) cannot be reached now. Passes: retry with backoff. */
  RegistryUnavailable: "registry_unavailable",
  /** The registry kept finding stale entries while it cleaned them up. Passes: retry. */
  OfficeBusy: "office_busy",
  /** The Server node lost its registration and is re-registering. Passes: retry (or reconnect). */
  NodeFenced: "node_fenced",
} as const;
export type JoinRefusal = (typeof JoinRefusal)[keyof typeof JoinRefusal];

/** Refusals that pass by themselves: a client retries the same join with backoff (D55). */
const TRANSIENT_JOIN_REFUSALS: ReadonlySet<string> = new Set<JoinRefusal>([
  JoinRefusal.RegistryUnavailable,
  JoinRefusal.OfficeBusy,
  JoinRefusal.NodeFenced,
]);

/** The reason string of a refused join or leave: `"<token>: <text>"`. */
export function joinRefusal(token: JoinRefusal, text: string): string {
  return `${token}: ${text}`;
}

/** A refusal as a client reads it: its token (null when the reason has none) and the text. */
export interface ParsedJoinRefusal {
  token: string | null;
  text: string;
  /** True only for a known token that passes by itself (retry the join). */
  transient: boolean;
}

const REFUSAL_TOKEN = /^([a-z][a-z0-9_]{0,63}): /;

/** Reads the reason of a `(false, reason)` join or leave ack (D55). */
export function parseJoinRefusal(reason: unknown): ParsedJoinRefusal {
  const text = typeof reason === "string" ? reason : "";
  const m = REFUSAL_TOKEN.exec(text);
  if (!m?.[1]) return { token: null, text, transient: false };
  return {
    token: m[1],
    text: text.slice(m[0].length),
    transient: TRANSIENT_JOIN_REFUSALS.has(m[1]),
  };
}
