/** SKILL channel: `client:get_skills` and `client:get_skill` (protocol.md §7.4–§7.5; D20–D22). */
import { z } from "zod";
import { ClientRequestBaseSchema, LIMITS, Sha256Hex, wireSize } from "./common.ts";

export const GetSkillsReqSchema = ClientRequestBaseSchema;
export type GetSkillsReq = z.infer<typeof GetSkillsReqSchema>;

/** A skill reference. The four required fields are always sent; consumers assume no optional. */
export const A2CSkillRefSchema = z.looseObject({
  name: z.string().min(1),
  source: z.string().min(1),
  path: z.string().min(1),
  description: z.string().min(1),
  uri: z.string().optional(),
  license: z.string().optional(),
  compatibility: z.string().optional(),
  allowed_tools: z.array(z.string()).optional(),
  skill_metadata: z.record(z.string(), z.unknown()).optional(),
  version: z.string().optional(),
  /** SKILL.md frontmatter `tags`, passed through when it is a list of strings (0.4.0). */
  tags: z.array(z.string()).optional(),
});
export type A2CSkillRef = z.infer<typeof A2CSkillRefSchema>;

export const GetSkillsRetSchema = z.looseObject({
  skills: z.array(A2CSkillRefSchema),
  req_id: z.string(),
});
export type GetSkillsRet = z.infer<typeof GetSkillsRetSchema>;

/** `rel_path` absent means `SKILL.md`; so does an empty string (D21). No chunk fields here. */
export const GetSkillReqSchema = ClientRequestBaseSchema.extend({
  name: z.string().max(LIMITS.skillName),
  rel_path: z.string().max(LIMITS.relPath).optional(),
});
export type GetSkillReq = z.infer<typeof GetSkillReqSchema>;

/** Exactly one of `body` / `blob_handle` is present on success. */
export const GetSkillRetSchema = z
  .looseObject({
    name: z.string(),
    rel_path: z.string(),
    mime_type: z.string(),
    total_size: wireSize,
    sha256: Sha256Hex,
    body: z.string().optional(),
    blob_handle: z.string().min(1).optional(),
    req_id: z.string(),
  })
  .refine((r) => (r.body === undefined) !== (r.blob_handle === undefined), {
    message: "exactly one of body / blob_handle must be present",
  });
export type GetSkillRet = z.infer<typeof GetSkillRetSchema>;
