/** The request schema of each routed `client:*` event: the relay's and the Computer's check. */
import type { z } from "zod";
import { Events, type ClientEvent } from "./events.ts";
import { GetBlobReqSchema } from "./messages/blob.ts";
import { GetSkillReqSchema, GetSkillsReqSchema } from "./messages/skill.ts";
import { GetToolsReqSchema, ToolCallReqSchema } from "./messages/tool.ts";

export const CLIENT_REQUEST_SCHEMAS: Readonly<Record<ClientEvent, z.ZodType>> = {
  [Events.GetTools]: GetToolsReqSchema,
  [Events.ToolCall]: ToolCallReqSchema,
  [Events.GetSkills]: GetSkillsReqSchema,
  [Events.GetSkill]: GetSkillReqSchema,
  [Events.GetBlob]: GetBlobReqSchema,
};
