/**
 * The tool service: `client:get_tools` and `client:tool_call` over the configured MCP servers, the
 * binary sideband with its spool and `tool` producer, cancel and timeout, and MCP-sourced skills.
 *
 * ```ts
 * const tools = await createToolService({ config, mcpConfigPath, minter, log, skillsHome });
 * // register tools.handlers / tools.producers with the Computer core
 * ```
 */
import { join } from "node:path";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type {
  ComputerConfig,
  ComputerService,
  HandleMinter,
  RequestContext,
} from "../contracts.ts";
import {
  A2C_TOOL_META_KEY,
  base64Length,
  mergeToolMeta,
  readServerToolMeta,
  type A2CToolMeta,
  type CallToolResult,
  type GetToolsRet,
  LIMITS,
  type SMCPTool,
  type ToolCallReq,
} from "@a2c-smcp/protocol";
import type { StorageFaultMetrics } from "../blob/storage-faults.ts";
import { loadMcpConfig, type McpServerConfig, type McpServers } from "./mcp-config.ts";
import type { McpConnection } from "./mcp-connection.ts";
import { createToolProducer } from "./producer.ts";
import {
  cancelledResult,
  ServerUnavailableError,
  textError,
  timeoutResult,
  toolNotFound,
  toWireResult,
} from "./results.ts";
import { applySideband } from "./sideband.ts";
import { SkillStager } from "./skill-staging.ts";
import { BlobSpool } from "./spool.ts";

export interface ToolServiceOptions {
  config: ComputerConfig;
  /** `--mcp-config FILE`; ignored when `servers` is given. */
  mcpConfigPath?: string;
  servers?: McpServers;
  minter: HandleMinter;
  log: Logger;
  /** The SKILL home; MCP `skill://` resources are staged under `<home>/mcp/` only when set. */
  skillsHome?: string;
  /** Called after MCP skills were staged/orphaned/restored (e.g. the SKILL registry's rescan). */
  onSkillsChanged?: () => void;
  /** Bound on the spool's total size (default 1 GiB, at least `maxSize`). */
  spoolMaxBytes?: number;
  /** Counts the spool's disk faults (the Computer's metrics, D57). */
  storageFaults?: StorageFaultMetrics;
  /** First MCP server restart delay (default 500 ms; doubles per failure, capped at 30 s). */
  restartBaseMs?: number;
}

/** The exposed tool service plus handles for diagnostics and tests. */
export interface ToolService extends ComputerService {
  readonly spool: BlobSpool;
  /** The MCP connection of a bundle (tests: pid, state). */
  connection(bundleId: string): McpConnection | undefined;
  /** Resolves when pending skill staging has finished. */
  skillsIdle(): Promise<void>;
}

/** Why an in-flight call was aborted; the SDK forwards `String(reason)` downstream. */
class CallAbort extends Error {
  constructor(readonly kind: "cancel" | "timeout" | "shutdown") {
    super(
      kind === "cancel"
        ? "cancelled by the agent"
        : kind === "timeout"
          ? "timeout"
          : "computer shutting down",
    );
    this.name = "CallAbort";
  }
}

/** The SDK's own request timeout is a backstop only; ours (the request's `timeout`) fires first. */
const SDK_TIMEOUT_SLACK_MS = 2_000;

export function exposedName(bundleId: string, tool: string): string {
  return `${bundleId}__${tool}`;
}

/**
 * `a2c_tool_meta` of one tool (protocol 0.4.0): `tool_meta[tool]` over `default_tool_meta` over
 * the server's `Tool._meta.a2c_tool_meta`, of which only `tags` is taken. Undefined when no layer
 * says anything (the tool then carries no `a2c_tool_meta`, as before 0.4.0). `malformed`: the
 * server's declaration was not an object with a list of strings as `tags`, and was dropped.
 */
export function toolMetaOf(
  tool: Tool,
  config: Pick<McpServerConfig, "tool_meta" | "default_tool_meta"> | undefined,
): { meta: A2CToolMeta | undefined; malformed: boolean } {
  const declared = readServerToolMeta(tool._meta?.[A2C_TOOL_META_KEY]);
  const server = declared.ok ? declared.layer : {};
  const own = config?.tool_meta?.[tool.name];
  const defaults = config?.default_tool_meta;
  const said = [own, defaults, server].some(
    (layer) =>
      layer !== undefined && Object.values(layer).some((v) => v !== undefined && v !== null),
  );
  return { meta: said ? mergeToolMeta(own, defaults, server) : undefined, malformed: !declared.ok };
}

export function toSmcpTool(bundleId: string, tool: Tool, toolMeta?: A2CToolMeta): SMCPTool {
  const out: SMCPTool = {
    name: exposedName(bundleId, tool.name),
    bundle_id: bundleId,
    description: tool.description ?? "",
    params_schema: tool.inputSchema,
    return_schema: tool.outputSchema ?? null,
  };
  if (tool.annotations) out.meta = { MCP_TOOL_ANNOTATION: JSON.stringify(tool.annotations) };
  if (toolMeta) out.meta = { ...out.meta, [A2C_TOOL_META_KEY]: JSON.stringify(toolMeta) };
  return out;
}

export async function createToolService(opts: ToolServiceOptions): Promise<ToolService> {
  const { config, minter } = opts;
  const log = opts.log.child({ service: "tools" });
  const servers =
    opts.servers ?? (opts.mcpConfigPath ? await loadMcpConfig(opts.mcpConfigPath) : {});
  const spool = await BlobSpool.open({
    dir: join(config.stateDir, "blobspool"),
    maxBytes: Math.max(opts.spoolMaxBytes ?? 1024 * 1024 * 1024, config.maxSize),
    log,
    ...(opts.storageFaults ? { metrics: opts.storageFaults } : {}),
  });

  let notify: ((e: "server:update_skills" | "server:update_tool_list") => void) | null = null;
  // The SKILL service's watcher sees staged changes and emits `server:update_skills` itself;
  // the callback only lets it react without waiting for its file-system watch.
  const skillsChanged = () => opts.onSkillsChanged?.();
  const stager = opts.skillsHome
    ? new SkillStager({
        home: opts.skillsHome,
        maxPackageBytes: config.maxSize,
        log,
        onChanged: skillsChanged,
      })
    : null;
  await stager?.orphanAllExisting();

  const entries = Object.entries(servers);
  // The MCP SDK (its client, its schemas, a JSON-schema validator) is loaded only by a Computer
  // that has MCP servers (D119): one serving skills alone starts without it (0.1 s of CPU).
  const mcp = entries.length > 0 ? await import("./mcp-connection.ts") : null;
  const connections = new Map<string, McpConnection>();
  /** exposed name → (bundle, original tool name); rebuilt whenever a tool list changes. */
  let mapping = new Map<string, { bundleId: string; tool: Tool }>();
  const rebuildMapping = () => {
    const next = new Map<string, { bundleId: string; tool: Tool }>();
    for (const [bundleId, conn] of connections) {
      for (const tool of conn.tools) {
        const name = exposedName(bundleId, tool.name);
        if (name.length > LIMITS.toolName) {
          log.warn({ tool: name }, "tool name too long for the wire; not exposed");
          continue;
        }
        next.set(name, { bundleId, tool });
      }
    }
    mapping = next;
  };

  let started = false;
  for (const [bundleId, cfg] of entries) {
    const conn = new mcp!.McpConnection({
      bundleId,
      config: cfg,
      log,
      ...(opts.restartBaseMs !== undefined ? { restartBaseMs: opts.restartBaseMs } : {}),
      // Room for the largest item we accept (hard cap, base64) plus envelope.
      maxMessageBytes: Math.max(16 * 1024 * 1024, 2 * base64Length(config.maxSize) + 1024 * 1024),
      events: {
        toolsChanged: () => {
          rebuildMapping();
          if (started) notify?.("server:update_tool_list");
        },
        up: (id, client) => void stager?.stage(id, client),
        down: (id) => void stager?.orphan(id),
        resourcesChanged: (id) => {
          const client = connections.get(id)?.liveClient;
          if (client) void stager?.stage(id, client);
        },
      },
    });
    connections.set(bundleId, conn);
  }
  await Promise.all([...connections.values()].map((c) => c.start()));
  started = true;

  /** In-flight calls by req_id (a Set: a misbehaving Agent may reuse an id). */
  const inflight = new Map<string, Set<AbortController>>();

  /** Tool lists whose malformed `a2c_tool_meta` declarations were logged (once per listing). */
  const warnedListings = new WeakSet<object>();

  async function getTools(req: { req_id: string }): Promise<GetToolsRet> {
    const tools: SMCPTool[] = [];
    for (const [bundleId, conn] of connections) {
      const listing = conn.tools;
      for (const tool of listing) {
        if (!mapping.has(exposedName(bundleId, tool.name))) continue;
        const { meta, malformed } = toolMetaOf(tool, servers[bundleId]);
        if (malformed && !warnedListings.has(listing)) {
          warnedListings.add(listing);
          log.warn(
            { bundle_id: bundleId, tool: tool.name },
            "a2c_tool_meta declared by the MCP server is not {tags: string[]}; dropped",
          );
        }
        tools.push(toSmcpTool(bundleId, tool, meta));
      }
    }
    return { tools, req_id: req.req_id };
  }

  async function toolCall(req: ToolCallReq, ctx: RequestContext): Promise<CallToolResult> {
    const entry = mapping.get(req.tool_name);
    if (!entry) return toolNotFound(req.tool_name);
    const conn = connections.get(entry.bundleId);
    if (!conn) return toolNotFound(req.tool_name);

    const ac = new AbortController();
    let set = inflight.get(req.req_id);
    if (!set) inflight.set(req.req_id, (set = new Set()));
    set.add(ac);
    const timer = setTimeout(() => ac.abort(new CallAbort("timeout")), req.timeout * 1000);
    const onShutdown = () => ac.abort(new CallAbort("shutdown"));
    ctx.signal.addEventListener("abort", onShutdown, { once: true });
    let raw;
    try {
      raw = await conn.callTool(entry.tool.name, req.params, {
        signal: ac.signal,
        timeoutMs: req.timeout * 1000 + SDK_TIMEOUT_SLACK_MS,
      });
    } catch (err) {
      return failureResult(err, ac.signal, req, entry.bundleId, ctx.log);
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener("abort", onShutdown);
      set.delete(ac);
      if (set.size === 0) inflight.delete(req.req_id);
    }
    return applySideband(toWireResult(raw), { config, spool, minter, log: ctx.log });
  }

  return {
    handlers: {
      "client:get_tools": getTools,
      "client:tool_call": toolCall,
    },
    producers: [createToolProducer(spool)],
    spool,
    connection: (id) => connections.get(id),
    skillsIdle: async () => {
      await stager?.idle();
    },
    attach(fn) {
      notify = fn;
    },
    detach() {
      notify = null;
    },
    cancel(reqId) {
      // Unknown or finished req_id: silent no-op (docs/protocol.md, tool_call).
      for (const ac of inflight.get(reqId) ?? []) ac.abort(new CallAbort("cancel"));
    },
    async close() {
      notify = null;
      for (const set of inflight.values()) {
        for (const ac of set) ac.abort(new CallAbort("shutdown"));
      }
      await Promise.all([...connections.values()].map((c) => c.close()));
      await stager?.idle();
    },
  };
}

function failureResult(
  err: unknown,
  signal: AbortSignal,
  req: ToolCallReq,
  bundleId: string,
  log: Logger,
): CallToolResult {
  const reason: unknown = signal.aborted ? signal.reason : null;
  if (reason instanceof CallAbort) {
    if (reason.kind === "cancel") return cancelledResult();
    if (reason.kind === "timeout") return timeoutResult(req.timeout);
    // Not `a2c_cancelled`: that marker means the Agent asked; this one did not.
    return textError("Tool call interrupted: the Computer is shutting down", {
      mcp_server: bundleId,
    });
  }
  if (err instanceof ServerUnavailableError) {
    return textError(err.message, { mcp_server: bundleId });
  }
  // The SDK's backstop timeout (McpError RequestTimeout, -32001).
  if ((err as { code?: unknown })?.code === -32001) return timeoutResult(req.timeout);
  log.warn({ err, tool: req.tool_name }, "tool call failed");
  const message = err instanceof Error ? err.message : String(err);
  return textError(`Tool call failed (MCP server '${bundleId}'): ${message}`, {
    mcp_server: bundleId,
  });
}
