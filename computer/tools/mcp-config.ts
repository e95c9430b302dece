/**
 * `--mcp-config FILE`: the MCP servers this Computer runs, keyed by `bundle_id`.
 *
 * ```json
 * { "mcpServers": {
 *     "demo": { "command": "node", "args": ["/srv/mcp/demo-server.js"],
 *               "env": { "X": "1" }, "cwd": "/srv" },
 *     "remote": { "url": "http://127.0.0.1:8123/mcp", "headers": { "x-api-key": "..." } } } }
 * ```
 * (`servers` is accepted as a synonym of `mcpServers`.) The bundle_id becomes the prefix of every
 * exposed tool name (`{bundle_id}__{tool}`) and the middle segment of MCP skill names, so it must
 * satisfy the skill-name lexer for the mcp server segment: `[A-Za-z0-9_-]+` without `__` (skills/names.ts).
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";

export const BUNDLE_ID_PATTERN = /^(?!.*__)[A-Za-z0-9_-]+$/;

/**
 * One configured ToolMeta layer (`tool_meta[tool]` or `default_tool_meta`, protocol 0.4.0). A
 * field missing or null inherits from the layer below; `tags: []` clears. `alias` is not taken:
 * this Computer exposes every tool under its own name.
 */
export const ToolMetaLayerSchema = z.strictObject({
  tags: z.array(z.string()).nullable().optional(),
  auto_apply: z.boolean().nullable().optional(),
  ret_object_mapper: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type ConfiguredToolMeta = z.infer<typeof ToolMetaLayerSchema>;

const toolMetaLayers = {
  tool_meta: z.record(z.string(), ToolMetaLayerSchema).optional(),
  default_tool_meta: ToolMetaLayerSchema.optional(),
};

const StdioServerSchema = z.strictObject({
  ...toolMetaLayers,
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
  disabled: z.boolean().optional(),
});

const HttpServerSchema = z.strictObject({
  ...toolMetaLayers,
  url: z.url(),
  headers: z.record(z.string(), z.string()).optional(),
  disabled: z.boolean().optional(),
});

export const McpServerConfigSchema = z.union([StdioServerSchema, HttpServerSchema]);
export type StdioServerConfig = z.infer<typeof StdioServerSchema>;
export type HttpServerConfig = z.infer<typeof HttpServerSchema>;
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

// Keys are checked by hand below: zod reports a bad record key only as "Invalid key in record".
const ServersSchema = z.record(z.string(), McpServerConfigSchema);

export const McpConfigFileSchema = z
  .looseObject({ mcpServers: ServersSchema.optional(), servers: ServersSchema.optional() })
  .refine((c) => (c.mcpServers === undefined) !== (c.servers === undefined), {
    message: "exactly one of mcpServers or servers is required",
  });

export type McpServers = Record<string, McpServerConfig>;

export function isStdio(cfg: McpServerConfig): cfg is StdioServerConfig {
  return "command" in cfg;
}

/** Parses and validates a config object; throws an Error naming the offending field. */
export function parseMcpConfig(raw: unknown): McpServers {
  const parsed = McpConfigFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`invalid MCP config: ${z.prettifyError(parsed.error)}`);
  }
  const servers: McpServers = parsed.data.mcpServers ?? parsed.data.servers ?? {};
  for (const id of Object.keys(servers)) {
    if (!BUNDLE_ID_PATTERN.test(id)) {
      throw new Error(
        `invalid MCP config: bundle_id ${JSON.stringify(id)} must match [A-Za-z0-9_-]+ without '__'`,
      );
    }
  }
  return Object.fromEntries(Object.entries(servers).filter(([, cfg]) => cfg.disabled !== true));
}

export async function loadMcpConfig(file: string): Promise<McpServers> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new Error(`cannot read MCP config ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`MCP config ${file} is not valid JSON: ${(err as Error).message}`);
  }
  return parseMcpConfig(raw);
}
