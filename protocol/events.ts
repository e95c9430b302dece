/**
 * Every event name of the stack in one `as const` object, and the socket.io event maps both ways,
 * derived from the message types so `new Server<...>()` and the client `Socket<...>` are typed.
 *
 * Event maps describe what a well-behaved peer sends. Handlers still validate every inbound
 * payload with the schemas: the types are a promise, the schemas are the check.
 */
import type { ErrorPayload } from "./errors.ts";
import type { GetBlobReq, GetBlobRet } from "./messages/blob.ts";
import type { PutBlobReq, PutBlobRet } from "./messages/upload.ts";
import type {
  EnterOfficeNotification,
  EnterOfficeReq,
  LeaveOfficeNotification,
  LeaveOfficeReq,
  ListRoomReq,
  ListRoomRet,
  ToolCallCancel,
  UpdateComputerConfigReq,
} from "./messages/office.ts";
import type { GetSkillReq, GetSkillRet, GetSkillsReq, GetSkillsRet } from "./messages/skill.ts";
import type { CallToolResult, GetToolsReq, GetToolsRet, ToolCallReq } from "./messages/tool.ts";

export const Events = {
  // client:* — Agent → Server → one Computer (routed, acked)
  GetTools: "client:get_tools",
  ToolCall: "client:tool_call",
  GetSkills: "client:get_skills",
  GetSkill: "client:get_skill",
  GetBlob: "client:get_blob",
  /** Agent → Computer upload, one chunk per request (0.4.0). */
  PutBlob: "client:put_blob",
  // server:* — to the Server
  JoinOffice: "server:join_office",
  LeaveOffice: "server:leave_office",
  ListRoom: "server:list_room",
  UpdateSkills: "server:update_skills",
  UpdateToolList: "server:update_tool_list",
  UpdateConfig: "server:update_config",
  UpdateDesktop: "server:update_desktop",
  ToolCallCancel: "server:tool_call_cancel",
  // notify:* — Server → office
  EnterOfficeNotify: "notify:enter_office",
  LeaveOfficeNotify: "notify:leave_office",
  UpdateSkillsNotify: "notify:update_skills",
  UpdateToolListNotify: "notify:update_tool_list",
  UpdateConfigNotify: "notify:update_config",
  UpdateDesktopNotify: "notify:update_desktop",
  ToolCallCancelNotify: "notify:tool_call_cancel",
} as const;
export type EventName = (typeof Events)[keyof typeof Events];

/** The routed `client:*` events this stack uses. */
export const CLIENT_EVENTS = [
  Events.GetTools,
  Events.ToolCall,
  Events.GetSkills,
  Events.GetSkill,
  Events.GetBlob,
  Events.PutBlob,
] as const;
export type ClientEvent = (typeof CLIENT_EVENTS)[number];

/** `server:update_*` → `notify:update_*` pairs. */
export const UPDATE_EVENTS = {
  [Events.UpdateSkills]: Events.UpdateSkillsNotify,
  [Events.UpdateToolList]: Events.UpdateToolListNotify,
  [Events.UpdateConfig]: Events.UpdateConfigNotify,
  [Events.UpdateDesktop]: Events.UpdateDesktopNotify,
} as const;

type Ack<T> = (answer: T | ErrorPayload) => void;

/** Request and answer types of every routed `client:*` event. */
export interface ClientEventTypes {
  "client:get_tools": { req: GetToolsReq; ret: GetToolsRet };
  "client:tool_call": { req: ToolCallReq; ret: CallToolResult };
  "client:get_skills": { req: GetSkillsReq; ret: GetSkillsRet };
  "client:get_skill": { req: GetSkillReq; ret: GetSkillRet };
  "client:get_blob": { req: GetBlobReq; ret: GetBlobRet };
  "client:put_blob": { req: PutBlobReq; ret: PutBlobRet };
}

type ClientEventMap = {
  [E in ClientEvent]: (
    req: ClientEventTypes[E]["req"],
    ack: Ack<ClientEventTypes[E]["ret"]>,
  ) => void;
};

/** Events a client (Agent or Computer) emits to the Server. */
export interface ClientToServerEvents extends ClientEventMap {
  "server:join_office": (
    req: EnterOfficeReq,
    ack: (ok: boolean, reason: string | null) => void,
  ) => void;
  "server:leave_office": (
    req: LeaveOfficeReq,
    ack?: (ok: boolean, reason: string | null) => void,
  ) => void;
  "server:list_room": (req: ListRoomReq, ack: Ack<ListRoomRet>) => void;
  "server:update_skills": (req: UpdateComputerConfigReq, ack?: () => void) => void;
  "server:update_tool_list": (req: UpdateComputerConfigReq, ack?: () => void) => void;
  "server:update_config": (req: UpdateComputerConfigReq, ack?: () => void) => void;
  "server:update_desktop": (req: UpdateComputerConfigReq, ack?: () => void) => void;
  "server:tool_call_cancel": (req: ToolCallCancel, ack?: () => void) => void;
}

/** Events the Server emits to clients: routed `client:*` (to Computers) and `notify:*`. */
export interface ServerToClientEvents extends ClientEventMap {
  "notify:enter_office": (n: EnterOfficeNotification) => void;
  "notify:leave_office": (n: LeaveOfficeNotification) => void;
  "notify:update_skills": (n: UpdateComputerConfigReq) => void;
  "notify:update_tool_list": (n: UpdateComputerConfigReq) => void;
  "notify:update_config": (n: UpdateComputerConfigReq) => void;
  "notify:update_desktop": (n: UpdateComputerConfigReq) => void;
  "notify:tool_call_cancel": (n: ToolCallCancel) => void;
}
