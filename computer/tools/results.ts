/**
 * CallToolResult builders: the MCP SDK's answer turned into the wire shape (D25: result-level
 * markers under `meta`, never `_meta`), and the isError results this Computer produces itself.
 * Tool failures are always a CallToolResult with `isError: true`, never a flat ErrorPayload
 * (docs/protocol.md, tool_call).
 */
import type { CallToolResult as McpCallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type CallToolResult, ErrorCode } from "@a2c-smcp/protocol";

/** A call to an MCP server that is being restarted (its answer is an isError result). */
export class ServerUnavailableError extends Error {
  constructor(readonly bundleId: string) {
    super(`MCP server '${bundleId}' is not running (it is being restarted); try again shortly`);
    this.name = "ServerUnavailableError";
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The TS SDK returns result-level metadata as `_meta`; the wire wants `meta` (D25). Both are merged
 * into `meta` (an existing `meta` wins on conflicts). Every other key passes through unchanged.
 */
export function toWireResult(raw: McpCallToolResult | Record<string, unknown>): CallToolResult {
  const { _meta, meta, content, toolResult, ...rest } = raw as Record<string, unknown>;
  const merged = { ...(isRecord(_meta) ? _meta : {}), ...(isRecord(meta) ? meta : {}) };
  let items: CallToolResult["content"] = [];
  if (Array.isArray(content)) items = content as CallToolResult["content"];
  else if (toolResult !== undefined) {
    // Pre-2024-11 servers answer `{toolResult}`; keep the value visible as text.
    items = [{ type: "text", text: JSON.stringify(toolResult) ?? "null" }];
  }
  const out: CallToolResult = { ...rest, content: items };
  if (Object.keys(merged).length > 0) out.meta = merged;
  return out;
}

export function textError(text: string, meta?: CallToolResult["meta"]): CallToolResult {
  return {
    content: [{ type: "text", text }],
    isError: true,
    ...(meta ? { meta } : {}),
  };
}

/** Unknown exposed tool name (4001 meaning, carried inside the CallToolResult). */
export function toolNotFound(toolName: string): CallToolResult {
  return textError(`Tool not found: '${toolName}' is not a tool of this Computer`, {
    error_code: ErrorCode.ToolNotFound,
  });
}

/** `notify:tool_call_cancel` interrupted the call (docs/protocol.md, tool_call). */
export function cancelledResult(): CallToolResult {
  return textError("Tool call cancelled by the agent", {
    a2c_cancelled: true,
    a2c_cancel_reason: "agent_requested",
  });
}

/** The request's `timeout` expired (docs/protocol.md, tool_call). */
export function timeoutResult(seconds: number): CallToolResult {
  return textError(`Tool call timeout: no result within ${seconds} s`, { a2c_timeout: true });
}
