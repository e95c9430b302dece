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

/** The key of `SMCPTool.meta` (a JSON string) and of an MCP tool's `_meta` declaration. */
export const A2C_TOOL_META_KEY = "a2c_tool_meta";

/**
 * The canonical `a2c_tool_meta` a Computer writes (0.4.0): every field present, null when unset.
 * On the wire it travels as the JSON string `SMCPTool.meta.a2c_tool_meta`.
 */
export const A2CToolMetaSchema = z.looseObject({
  auto_apply: z.boolean().nullable(),
  alias: z.string().nullable(),
  tags: z.array(z.string()).nullable(),
  ret_object_mapper: z.record(z.string(), z.unknown()).nullable(),
});
export type A2CToolMeta = z.infer<typeof A2CToolMetaSchema>;

/** One configured layer (`tool_meta[tool]` or `default_tool_meta`): any field may be left out. */
export type ToolMetaLayer = Partial<A2CToolMeta>;

/** What an MCP server may declare in `Tool._meta["a2c_tool_meta"]`: only `tags` is taken. */
export const ServerToolMetaDeclarationSchema = z.looseObject({
  tags: z.array(z.string()).nullable().optional(),
});

/**
 * The server's declaration as the merge takes it: `{tags}` only (every other field is filtered
 * out), or `{ok: false}` when it is malformed (not an object, or `tags` not a list of strings),
 * which the Computer drops with a warning and never lets fail `tools/list`.
 */
export function readServerToolMeta(
  declared: unknown,
): { ok: true; layer: ToolMetaLayer } | { ok: false } {
  if (declared === undefined || declared === null) return { ok: true, layer: {} };
  const parsed = ServerToolMetaDeclarationSchema.safeParse(declared);
  if (!parsed.success) return { ok: false };
  return { ok: true, layer: parsed.data.tags === undefined ? {} : { tags: parsed.data.tags } };
}

/**
 * The three-layer merge: `tool_meta[tool]` over `default_tool_meta` over the server's declaration.
 * A field missing or null inherits from below; `tags` replaces as a whole (never merged), and
 * `[]` clears explicitly.
 */
export function mergeToolMeta(
  tool: ToolMetaLayer | undefined,
  defaults: ToolMetaLayer | undefined,
  server: ToolMetaLayer | undefined,
): A2CToolMeta {
  const pick = <K extends keyof A2CToolMeta>(key: K): A2CToolMeta[K] =>
    tool?.[key] ?? defaults?.[key] ?? server?.[key] ?? null;
  return {
    auto_apply: pick("auto_apply"),
    alias: pick("alias"),
    tags: pick("tags"),
    ret_object_mapper: pick("ret_object_mapper"),
  };
}

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
