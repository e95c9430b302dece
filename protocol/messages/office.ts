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
