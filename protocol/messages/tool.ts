/**
 * Tools: `client:get_tools`, `client:tool_call`, and MCP's CallToolResult with the A2C binary
 * sideband (protocol.md §8; D24–D25).
 */
import { z } from "zod";
import { ClientRequestBaseSchema, LIMITS, Sha256Hex, wireInt, wireSize } from "./common.ts";

export const GetToolsReqSchema = ClientRequestBaseSchema;
export type GetToolsReq = z.infer<typeof GetToolsReqSchema>;

/** `SMCPTool.meta` values are scalars; `a2c_tool_meta` is a JSON *string*. */
export const SMCPToolMetaSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .nullable();

export const SMCPToolSchema = z.looseObject({
  /** exposed name `{bundle_id}__{alias ?? original}`; sent verbatim as `tool_name`. */
  name: z.string().min(1),
  bundle_id: z.string().min(1),
  description: z.string(),
  params_schema: z.record(z.string(), z.unknown()),
  return_schema: z.record(z.string(), z.unknown()).nullable().optional(),
  meta: SMCPToolMetaSchema.optional(),
});
export type SMCPTool = z.infer<typeof SMCPToolSchema>;

export const GetToolsRetSchema = z.looseObject({
  tools: z.array(SMCPToolSchema),
  req_id: z.string(),
});
export type GetToolsRet = z.infer<typeof GetToolsRetSchema>;

/** Largest tool timeout accepted, in seconds (security guidance: at most an hour). */
export const MAX_TOOL_TIMEOUT_S = 3600;

export const ToolCallReqSchema = ClientRequestBaseSchema.extend({
  tool_name: z.string().min(1).max(LIMITS.toolName),
  params: z.record(z.string(), z.unknown()),
  timeout: wireInt.refine((n) => n >= 1 && n <= MAX_TOOL_TIMEOUT_S, {
    message: `timeout must be an integer number of seconds in 1..${MAX_TOOL_TIMEOUT_S}`,
  }),
});
export type ToolCallReq = z.infer<typeof ToolCallReqSchema>;

/** Item-level sideband markers on `_meta` (all three together when an item was sidebanded). */
export const SidebandMetaSchema = z.looseObject({
  a2c_blob_handle: z.string().min(1).optional(),
  a2c_total_size: wireSize.optional(),
  a2c_sha256: Sha256Hex.optional(),
});
export type SidebandMeta = z.infer<typeof SidebandMetaSchema>;

export const SIDEBAND_KEYS = {
  handle: "a2c_blob_handle",
  totalSize: "a2c_total_size",
  sha256: "a2c_sha256",
} as const;

const itemMeta = { _meta: SidebandMetaSchema.optional() };

export const TextContentSchema = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  ...itemMeta,
});
/** `data` is base64; empty when the bytes travel through the sideband. */
export const ImageContentSchema = z.looseObject({
  type: z.literal("image"),
  data: z.string(),
  mimeType: z.string(),
  ...itemMeta,
});
export const AudioContentSchema = z.looseObject({
  type: z.literal("audio"),
  data: z.string(),
  mimeType: z.string(),
  ...itemMeta,
});
export const TextResourceContentsSchema = z.looseObject({
  uri: z.string(),
  mimeType: z.string().optional(),
  text: z.string(),
});
export const BlobResourceContentsSchema = z.looseObject({
  uri: z.string(),
  mimeType: z.string().optional(),
  blob: z.string(),
});
export const EmbeddedResourceSchema = z.looseObject({
  type: z.literal("resource"),
  resource: z.union([TextResourceContentsSchema, BlobResourceContentsSchema]),
  ...itemMeta,
});
/** Any other MCP content type (e.g. `resource_link`) passes through untouched. */
export const OtherContentSchema = z.looseObject({ type: z.string(), ...itemMeta });

export const ContentItemSchema = z.union([
  TextContentSchema,
  ImageContentSchema,
  AudioContentSchema,
  EmbeddedResourceSchema,
  OtherContentSchema,
]);
export type TextContent = z.infer<typeof TextContentSchema>;
export type ImageContent = z.infer<typeof ImageContentSchema>;
export type AudioContent = z.infer<typeof AudioContentSchema>;
export type EmbeddedResource = z.infer<typeof EmbeddedResourceSchema>;
export type ContentItem = z.infer<typeof ContentItemSchema>;

/** Result-level A2C markers travel under `meta` on the wire, never `_meta` (D25). */
export const ResultMetaSchema = z.looseObject({
  a2c_cancelled: z.boolean().optional(),
  a2c_cancel_reason: z.string().optional(),
  a2c_timeout: z.boolean().optional(),
  error_code: wireInt.optional(),
  mcp_server: z.string().optional(),
  auth_hint: z
    .looseObject({ action: z.string().optional(), message: z.string().optional() })
    .optional(),
});
export type ResultMeta = z.infer<typeof ResultMetaSchema>;

export const CallToolResultSchema = z.looseObject({
  content: z.array(ContentItemSchema),
  isError: z.boolean().optional(),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  meta: ResultMetaSchema.optional(),
});
export type CallToolResult = z.infer<typeof CallToolResultSchema>;
